"""One new record upstream, committed to a built mirror as upstream would: a Sigma rule, a Stratus Red Team
technique (a new release) or a KEV entry (a new feed version); each answers (its title, the commit)."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

from pipeline.sources.mirror import Mirror
from tests.plugins.mirror_changes import add_commit


def _git(mirror: Mirror, source: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(mirror.git_dir(source)), *args], check=True,
                          capture_output=True, text=True).stdout  # fmt: skip


def _first_file(mirror: Mirror, source: str, folder: str, suffix: str) -> tuple[str, str]:
    """The first file under `folder` ending in `suffix`: (its path, its text)."""
    names = _git(mirror, source, "ls-tree", "-r", "--name-only", "HEAD", folder).split()
    rel = sorted(f for f in names if f.endswith(suffix))[0]
    return rel, _git(mirror, source, "show", f"HEAD:{rel}")


def new_sigma_rule(mirror: Mirror, token: str) -> tuple[str, str]:
    """A copy of a rule with a new id, title and description."""
    _, text = _first_file(mirror, "sigma", "rules/windows/process_creation", ".yml")
    title = f"Quokka telemetry beacon {token} launched by a scheduled task"
    new = {
        "title:": f"title: {title}",
        "id:": f"id: {uuid.uuid4()}",
        "description:": f"description: Detects the {token} quokka beacon binary started from a scheduled task.",
    }
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
    _, text = _first_file(mirror, "stratus_red_team", "docs/attack-techniques/AWS", ".md")
    title = f"Exfiltrate quokka beacon {token} data through a shared snapshot"
    lines = [f"title: {title}" if line.startswith("title: ") else line for line in text.splitlines()]
    heading = next(i for i, line in enumerate(lines) if line.startswith("# "))
    lines[heading] = f"# {title}"
    body = "\n".join(lines) + f"\n\nThe {token} quokka beacon copies data out of the account.\n"
    path = f"docs/attack-techniques/AWS/aws.exfiltration.bench-{token}.md"
    return title, add_commit(mirror, "stratus_red_team", {path: body.encode()}, "bench: a technique", keep=True)
