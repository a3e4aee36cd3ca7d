"""Run git safely (timeouts, no prompts) and check out exactly one commit, sparse and shallow."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from secrag.errors import FetchError
from secrag.net.url_policy import UrlPolicy

SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GCM_INTERACTIVE": "never",
    "LC_ALL": "C",
}


# Inherited from a surrounding git process (a hook, say), these would point git at the wrong repo.
_REPO_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)


def _pinned_resolve(policy: UrlPolicy, url: str) -> str | None:
    """curl's `host:port:addr,...` pinning the URL's host to the addresses the policy vetted."""
    parts = policy.check(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = policy.vetted_addresses(parts.hostname, port)
    return f"{parts.hostname}:{port}:" + ",".join(f"[{a}]" if ":" in a else a for a in addresses)


def git_env(
    policy: UrlPolicy | None = None, extra: Mapping[str, str] | None = None, url: str | None = None
) -> dict[str, str]:
    """The environment for git: never prompt, only the transports the URL policy allows, and the
    URL's host pinned to its vetted addresses (git's curl connects to nothing else)."""
    env = {k: v for k, v in os.environ.items() if k not in _REPO_VARS}
    env.update(_GIT_ENV)
    if policy is not None:
        env["GIT_ALLOW_PROTOCOL"] = ":".join(policy.git_protocols())
        # git would follow HTTP redirects itself, past the URL policy; upstream URLs are canonical.
        config = {"http.followRedirects": "false"}
        resolve = _pinned_resolve(policy, url) if url else None
        if resolve:
            config["http.curloptResolve"] = resolve
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for i, (key, value) in enumerate(config.items()):
            env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    env.update(extra or {})
    return env


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def run_git(
    args: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    what: str = "git",
) -> str:
    """stdout of `git args`; FetchError with git's last stderr line on failure or timeout.

    git runs in its own process group so that a timeout also kills its helpers
    (git-remote-https, upload-pack), which would otherwise keep the pipes open.
    """
    if timeout <= 0:
        raise FetchError(f"{what}: no time left")
    try:
        proc = subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=dict(env) if env else git_env(),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise FetchError("git is not installed", hint="install git (2.27 or newer)") from exc
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        _kill_group(proc)
        raise FetchError(
            f"{what}: timed out after {timeout:g} s", hint="upstream unreachable or slow; raise the probe/fetch timeout"
        ) from exc
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        reason = _last_line(err.decode("utf-8", "replace")) or f"exit status {proc.returncode}"
        raise FetchError(f"{what}: {reason}")
    return out.decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill proc and every process it started, then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def sparse_patterns(paths: Iterable[str]) -> list[str]:
    """Non-cone sparse-checkout patterns (gitignore syntax, anchored) for the spec's path globs."""
    return [p if p.startswith("/") else f"/{p}" for p in paths]


def checkout(
    repo_url: str, commit: str, paths: Sequence[str], dest: Path, timeout: float, policy: UrlPolicy | None = None
) -> Path:
    """A sparse, shallow, blobless checkout of exactly `commit` into dest (empty or absent)."""
    policy = policy or UrlPolicy()
    if not SHA_RE.match(commit):
        raise FetchError(f"refusing to check out {commit!r}: not a full 40-hex commit SHA")
    policy.check(repo_url)
    if dest.exists() and any(dest.iterdir()):
        raise FetchError(f"checkout folder {dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    try:
        _checkout(repo_url, commit, paths, dest, time.monotonic() + timeout, policy)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # a half checkout must never be parsed
        raise
    return dest


def _checkout(repo_url: str, commit: str, paths: Sequence[str], dest: Path, deadline: float, policy: UrlPolicy) -> None:
    env = git_env(policy, url=repo_url)
    where = f"git checkout of {repo_url} at {commit[:12]}"

    def git(*args: str) -> str:
        return run_git(["-C", str(dest), *args], timeout=deadline - time.monotonic(), env=env, what=where)

    git("init", "-q")
    git("remote", "add", "origin", repo_url)
    git("config", "core.sparseCheckout", "true")
    git("config", "core.sparseCheckoutCone", "false")
    (dest / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (dest / ".git" / "info" / "sparse-checkout").write_text("\n".join(sparse_patterns(paths)) + "\n", encoding="utf-8")
    git("fetch", "-q", "--depth", "1", "--filter=blob:none", "--no-tags", "origin", commit)
    git("-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit)
    head = git("rev-parse", "HEAD").strip()
    if head != commit:
        raise FetchError(f"{where}: HEAD is {head}, not the probed commit")
