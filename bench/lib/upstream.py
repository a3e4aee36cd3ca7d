"""Upstream moving on in a built mirror: one new record committed as upstream would (a Sigma rule, a Stratus Red
Team technique in a new release, a KEV entry in a new feed version: each answers its title and the commit), and a
source's bare repository as its git server, whose post-receive hook (lib/post_receive.py) sends the webhook."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

from pipeline.sources.git_fetch import run_git
from pipeline.sources.mirror import GIT_TIMEOUT, Mirror, mirror_env
from tests.plugins.mirror_changes import _keep_head, add_commit


def git(*args: str, git_dir: Path | None = None) -> str:
    env = mirror_env() if git_dir is None else mirror_env(GIT_DIR=str(git_dir))
    return run_git(args, timeout=GIT_TIMEOUT, env=env, what="bench upstream")


def first_file(mirror: Mirror, source: str, folder: str, suffix: str) -> str:
    """The text of the first file under `folder` ending in `suffix`."""
    names = git("ls-tree", "-r", "--name-only", "HEAD", folder, git_dir=mirror.git_dir(source)).split()
    return git("show", f"HEAD:{sorted(f for f in names if f.endswith(suffix))[0]}", git_dir=mirror.git_dir(source))


def new_sigma_rule(mirror: Mirror, token: str) -> tuple[str, str]:
    """A copy of a rule with a new id, title and description."""
    text = first_file(mirror, "sigma", "rules/windows/process_creation", ".yml")
    title = f"Quokka telemetry beacon {token} launched by a scheduled task"
    what = f"Detects the {token} quokka beacon binary started from a scheduled task."
    new = {"title:": f"title: {title}", "id:": f"id: {uuid.uuid4()}", "description:": f"description: {what}"}
    lines = [next((v for k, v in new.items() if line.startswith(k)), line) for line in text.splitlines()]
    path = f"rules/windows/process_creation/proc_creation_win_bench_{token}.yml"
    return title, add_commit(mirror, "sigma", {path: ("\n".join(lines) + "\n").encode()}, "bench: a rule", keep=True)


def new_kev_entry(mirror: Mirror, token: str) -> tuple[str, str]:
    """A copy of the first entry with a new CVE and name, under a new catalogVersion."""
    feed = json.loads(mirror.feed_path("cisa_kev").read_bytes())
    title = f"Quokka Telemetry Beacon {token} Command Injection Vulnerability"
    entry = dict(feed["vulnerabilities"][0])
    entry.update(cveID=f"CVE-2099-{int(token, 16) % 90000 + 10000}", vulnerabilityName=title, vendorProject="Quokka")
    entry["shortDescription"] = f"The {token} quokka telemetry beacon lets an attacker inject commands."
    feed["vulnerabilities"].insert(0, entry)
    feed["count"] = len(feed["vulnerabilities"])
    feed["catalogVersion"] = f"2099.01.{int(time.time()) % 100000}"
    changes = {mirror.sources["cisa_kev"].feed_path: json.dumps(feed, indent=2).encode()}
    return title, add_commit(mirror, "cisa_kev", changes, "bench: a KEV entry", keep=True)


def new_stratus_technique(mirror: Mirror, token: str) -> tuple[str, str]:
    """A copy of a technique page with a new title (its front matter's, which the parser reads, and its heading)."""
    text = first_file(mirror, "stratus_red_team", "docs/attack-techniques/AWS", ".md")
    title = f"Exfiltrate quokka beacon {token} data through a shared snapshot"
    lines = [f"title: {title}" if line.startswith("title: ") else line for line in text.splitlines()]
    heading = next(i for i, line in enumerate(lines) if line.startswith("# "))
    lines[heading] = f"# {title}"
    body = "\n".join(lines) + f"\n\nThe {token} quokka beacon copies data out of the account.\n"
    path = f"docs/attack-techniques/AWS/aws.exfiltration.bench-{token}.md"
    return title, add_commit(mirror, "stratus_red_team", {path: body.encode()}, "bench: a technique", keep=True)


class GitServer:
    """The source's bare repository as the server, a clone in `work` where a contributor commits."""

    def __init__(self, mirror: Mirror, source: str, repository: str, work: Path) -> None:
        self.mirror, self.source, self.repository = mirror, source, repository
        self.server = mirror.git_dir(source)
        self.hook = self.server / "hooks" / "post-receive"
        if not (work / "git" / self.server.name).exists():
            git("clone", "--bare", "--shared", str(self.server), str(work / "git" / self.server.name))
        self.clone = replace(mirror, root=work)

    def install_hook(self, hooks: str, secret_file: Path) -> None:
        settings = {"hookurl": hooks, "repository": self.repository, "hooksecretfile": str(secret_file)}
        for key, value in settings.items():
            git("config", f"secrag.{key}", value, git_dir=self.server)
        self.hook.parent.mkdir(exist_ok=True)
        self.hook.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).parent / 'post_receive.py'}\n")
        self.hook.chmod(0o755)

    def remove_hook(self) -> None:
        self.hook.unlink(missing_ok=True)

    def push(self, commit: str) -> str:
        """`git push` of the clone's commit to the server's branch: what the server's hook said (stderr)."""
        branch = f"refs/heads/{self.mirror.sources[self.source].branch}"
        env = mirror_env(GIT_DIR=str(self.clone.git_dir(self.source)))
        done = subprocess.run(["git", "push", "--quiet", str(self.server), f"{commit}:{branch}"], env=env,
                              capture_output=True, text=True, timeout=GIT_TIMEOUT, check=True)  # fmt: skip
        _keep_head(self.mirror, self.mirror.sources[self.source].mirror_name, commit)  # so runs keep it
        return done.stderr.strip()
