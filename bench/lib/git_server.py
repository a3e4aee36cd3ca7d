"""A source's bare repository in a built mirror as its upstream's git server, with a clone that pushes to it and
the post-receive hook (lib/post_receive.py) that sends the repository's signed webhook."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from pipeline.sources.git_fetch import run_git
from pipeline.sources.mirror import GIT_TIMEOUT, Mirror, mirror_env
from tests.plugins.mirror_changes import _keep_head

HOOK = Path(__file__).resolve().parent / "post_receive.py"


class GitServer:
    def __init__(self, mirror: Mirror, source: str, repository: str, work: Path) -> None:
        self.mirror, self.source, self.repository = mirror, source, repository
        self.server = mirror.git_dir(source)
        self.hook = self.server / "hooks" / "post-receive"
        clone = work / "git" / self.server.name
        if not clone.exists():
            self.git("clone", "--bare", "--shared", str(self.server), str(clone))
        self.clone = replace(mirror, root=work)  # a change is committed here, as a contributor does

    def git(self, *args: str, git_dir: Path | None = None) -> str:
        env = mirror_env() if git_dir is None else mirror_env(GIT_DIR=str(git_dir))
        return run_git(args, timeout=GIT_TIMEOUT, env=env, what="bench git server").strip()

    def install_hook(self, hooks: str, secret_file: Path) -> None:
        settings = {"hookurl": hooks, "repository": self.repository, "hooksecretfile": str(secret_file)}
        for key, value in settings.items():
            self.git("config", f"secrag.{key}", value, git_dir=self.server)
        self.hook.parent.mkdir(exist_ok=True)
        self.hook.write_text(f"#!/bin/sh\nexec {sys.executable} {HOOK}\n", encoding="utf-8")
        self.hook.chmod(0o755)

    def remove_hook(self) -> None:
        self.hook.unlink(missing_ok=True)

    def push(self, commit: str) -> str:
        """`git push` of the clone's commit to the server's branch: what the server's hook said (stderr)."""
        branch = f"refs/heads/{self.mirror.sources[self.source].branch}"
        env = mirror_env(GIT_DIR=str(self.clone.git_dir(self.source)))
        done = subprocess.run(
            ["git", "push", "--quiet", str(self.server), f"{commit}:{branch}"],
            env=env, capture_output=True, text=True, timeout=GIT_TIMEOUT, check=True,
        )  # fmt: skip
        _keep_head(self.mirror, self.mirror.sources[self.source].mirror_name, commit)  # so runs keep it
        return done.stderr.strip()
