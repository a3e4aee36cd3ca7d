"""Cheap upstream version probes: a branch's commit, the latest release tag, or a feed's version."""

from __future__ import annotations

import hashlib
import json
import re
import time
from datetime import UTC, datetime

from secrag.errors import FetchError

from .git_fetch import SHA_RE, git_env, run_git
from .http_fetch import get_bytes, get_json
from .interface import UpstreamVersion
from .registry import SourceSpec
from .upstream import UpstreamConfig

_TAG_RE = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/+-]{1,200}$")


def ls_remote(repo_url: str, refs: list[str], cfg: UpstreamConfig, timeout: float) -> dict[str, str]:
    """{ref: sha} for the refs that exist in the remote repository."""
    cfg.policy.check(repo_url)
    out = run_git(
        ["ls-remote", "--", repo_url, *refs],
        timeout=timeout,
        env=git_env(cfg.policy, url=repo_url),
        what=f"git ls-remote {repo_url}",
    )
    found: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if SHA_RE.match(sha):
            found[ref.strip()] = sha
    return found


def branch_commit(repo_url: str, branch: str, cfg: UpstreamConfig, timeout: float) -> str:
    """Full SHA of the branch head."""
    ref = f"refs/heads/{branch}"
    sha = ls_remote(repo_url, [ref], cfg, timeout).get(ref)
    if sha is None:
        raise FetchError(f"{repo_url} has no branch {branch!r}", hint="check `branch` in the source registry")
    return sha


def tag_commit(repo_url: str, tag: str, cfg: UpstreamConfig, timeout: float) -> str:
    """Full SHA of the commit a tag points at (annotated tags peeled)."""
    if not _TAG_RE.match(tag):
        raise FetchError(f"refusing suspicious tag name {tag!r}")
    ref = f"refs/tags/{tag}"
    found = ls_remote(repo_url, [ref, ref + "^{}"], cfg, timeout)
    sha = found.get(ref + "^{}") or found.get(ref)
    if sha is None:
        raise FetchError(f"{repo_url} has no tag {tag!r}")
    return sha


def latest_release(spec: SourceSpec, cfg: UpstreamConfig, timeout: float) -> tuple[str, str]:
    """(tag name, API URL) of the repository's latest GitHub release."""
    if not spec.github:
        raise FetchError(f"{spec.name}: release tracking needs `github: owner/name` in the registry")
    url = f"{cfg.github_api_base}/repos/{spec.github}/releases/latest"
    body = get_json(url, cfg, timeout)
    tag = body.get("tag_name") if isinstance(body, dict) else None
    if not isinstance(tag, str) or not tag:
        raise FetchError(f"{url}: no tag_name in the latest release")
    return tag, url


def feed_version(data: bytes, field: str) -> str:
    """The feed's own version (`field`, dotted for nested keys), or a sha256 of its bytes."""
    if not field:
        return "sha256:" + hashlib.sha256(data).hexdigest()
    try:
        value: object = json.loads(data)
    except ValueError as exc:
        raise FetchError(f"feed is not valid JSON ({exc})") from exc
    for key in field.split("."):
        if not isinstance(value, dict) or key not in value:
            raise FetchError(f"feed has no {field!r} field", hint="check `version_field` in the source registry")
        value = value[key]
    if value is None or isinstance(value, dict | list) or str(value) == "":
        raise FetchError(f"feed field {field!r} holds no usable version: {value!r}")
    return str(value)


def _repo(spec: SourceSpec, cfg: UpstreamConfig) -> str:
    url = cfg.repo_url(spec)
    if not url:
        raise FetchError(f"{spec.name}: no repository URL in the registry")
    return url


def probe(spec: SourceSpec, cfg: UpstreamConfig, timeout: float | None = None) -> UpstreamVersion:
    """The upstream's current version, within `timeout` (default cfg.probe_timeout) seconds."""
    budget = timeout if timeout is not None else cfg.probe_timeout
    deadline = time.monotonic() + budget

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchError(f"{spec.name}: probe did not finish within {budget:g} s")
        return remaining

    if spec.tracking == "commit":
        url = _repo(spec, cfg)
        sha = branch_commit(url, spec.branch, cfg, left())
        version, commit = sha, sha
    elif spec.tracking == "release":
        url = _repo(spec, cfg)
        version, _api = latest_release(spec, cfg, left())
        commit = tag_commit(url, version, cfg, left())
    elif spec.tracking == "feed":
        url = cfg.feed_url(spec)
        if not url:
            raise FetchError(f"{spec.name}: feed tracking needs `feed_url` in the registry")
        version, commit = feed_version(get_bytes(url, cfg, left()), spec.version_field), None
    else:
        raise FetchError(f"{spec.name}: unknown tracking {spec.tracking!r}")
    return UpstreamVersion(
        source=spec.name, tracking=spec.tracking, version=version, commit=commit, url=url, checked_at=datetime.now(UTC)
    )
