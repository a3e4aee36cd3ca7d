"""Cheap upstream version probes: a branch's commit (`git ls-remote`), the latest release tag or a feed's
version, the last two by conditional requests: given the previous probe's answer, a 304 confirms its version
without a body, and a release's tag is not resolved to its commit again. A release source with a release index
(ATT&CK's index.json) takes its version from the index at the branch head, the release tag when there is none."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from secrag.errors import FetchError
from secrag.net.downloads import Answer
from secrag.net.rate_limits import RateLimit

from .git_fetch import SHA_RE, git_env, run_git
from .http_fetch import get_conditional, parse_json
from .interface import UpstreamVersion
from .registry import SourceSpec
from .upstream import UpstreamConfig
from .version_index import from_index, index_url, indexed_release, read_index

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


def release_url(spec: SourceSpec, cfg: UpstreamConfig) -> str:
    """The releases API URL of the repository's latest release."""
    if not spec.github:
        raise FetchError(f"{spec.name}: release tracking needs `github: owner/name` in the registry")
    return f"{cfg.github_api_base}/repos/{spec.github}/releases/latest"


def release_tag(url: str, body: bytes) -> str:
    """The tag name of a latest-release answer."""
    release = parse_json(body, url)
    tag = release.get("tag_name") if isinstance(release, dict) else None
    if not isinstance(tag, str) or not tag:
        raise FetchError(f"{url}: no tag_name in the latest release")
    return tag


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


def _answered(seen: UpstreamVersion, url: str, answer: Answer, known: UpstreamVersion | None) -> UpstreamVersion:
    """seen with what an HTTP probe keeps of its answer: validators for the next request, the rate limit, a 304."""
    etag, modified = answer.headers.get("etag"), answer.headers.get("last-modified")
    if answer.not_modified and known is not None:  # a 304 may omit the validators it confirmed
        etag, modified = etag or known.etag, modified or known.last_modified
    return replace(
        seen,
        etag=etag,
        last_modified=modified,
        validated=url if etag or modified else "",
        rate=RateLimit.from_headers(answer.headers),
        not_modified=answer.not_modified,
    )


def index_probe(
    spec: SourceSpec, cfg: UpstreamConfig, left: Callable[[], float], now: datetime, known: UpstreamVersion | None
) -> UpstreamVersion | None:
    """The newest version the release index at the branch head lists, None when the head has no index (the
    release tag answers then). The index is read only when the head moved since the last probe."""
    url = _repo(spec, cfg)
    head = branch_commit(url, spec.branch, cfg, left())
    if known is not None and known.commit == head:
        if from_index(spec, known.url):
            return replace(known, checked_at=now, not_modified=False)
        return None  # the same head still has no index
    data = read_index(url, head, spec, cfg, left())
    if data is None:
        return None
    release = indexed_release(data, spec, f"{spec.name}: {spec.version_index} at {head[:12]}")
    return UpstreamVersion(spec.name, spec.tracking, release.label, head, index_url(spec, head), now)


def probe(
    spec: SourceSpec, cfg: UpstreamConfig, timeout: float | None = None, known: UpstreamVersion | None = None
) -> UpstreamVersion:
    """The upstream's current version, within `timeout` (default cfg.probe_timeout) seconds; a release or feed
    by a conditional request when `known` (the previous probe's answer) holds validators for its URL."""
    budget = timeout if timeout is not None else cfg.probe_timeout
    deadline = time.monotonic() + budget

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchError(f"{spec.name}: probe did not finish within {budget:g} s")
        return remaining

    now = datetime.now(UTC)
    if spec.tracking == "commit":
        url = _repo(spec, cfg)
        sha = branch_commit(url, spec.branch, cfg, left())
        return UpstreamVersion(spec.name, spec.tracking, sha, sha, url, now)
    if spec.tracking == "release" and spec.version_index:
        indexed = index_probe(spec, cfg, left, now, known)
        if indexed is not None:
            return indexed
    if spec.tracking == "release":
        url, api = _repo(spec, cfg), release_url(spec, cfg)
        answer = get_conditional(api, cfg, left(), known.validators(api) if known else {})
        if answer.not_modified and known is not None:
            return _answered(replace(known, checked_at=now), api, answer, known)
        tag = release_tag(api, answer.body)
        commit = tag_commit(url, tag, cfg, left())
        return _answered(UpstreamVersion(spec.name, spec.tracking, tag, commit, url, now), api, answer, known)
    if spec.tracking == "feed":
        url = cfg.feed_url(spec)
        if not url:
            raise FetchError(f"{spec.name}: feed tracking needs `feed_url` in the registry")
        answer = get_conditional(url, cfg, left(), known.validators(url) if known else {})
        if answer.not_modified and known is not None:
            return _answered(replace(known, checked_at=now), url, answer, known)
        version = feed_version(answer.body, spec.version_field)
        return _answered(UpstreamVersion(spec.name, spec.tracking, version, None, url, now), url, answer, known)
    raise FetchError(f"{spec.name}: unknown tracking {spec.tracking!r}")
