"""Fetch exactly the probed (or pinned) upstream version of a source into a work folder."""

from __future__ import annotations

import logging
import re
import time
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from secrag.errors import FetchError

from .git_fetch import SHA_RE, checkout
from .http_fetch import download
from .interface import FetchResult, UpstreamVersion
from .probes import branch_commit, feed_version, tag_commit
from .registry import SourceSpec
from .upstream import UpstreamConfig
from .version_index import TAG_PREFIX, fetch_indexed, from_index, index_url, indexed_release, read_index

log = logging.getLogger(__name__)
_SHORT_SHA = re.compile(r"^[0-9a-f]{4,39}$")


def _resolve_pin(spec: SourceSpec, repo_url: str, pin: str, cfg: UpstreamConfig, timeout: float) -> tuple[str, str]:
    """(version, commit) of a pinned commit SHA or tag."""
    if SHA_RE.match(pin):
        return pin, pin
    if _SHORT_SHA.match(pin):
        try:
            commit = tag_commit(repo_url, pin, cfg, timeout)  # a tag may look like a short SHA
        except FetchError as exc:
            raise FetchError(
                f"{spec.name}: {pin!r} looks like a short commit SHA, which a remote repository cannot resolve",
                hint="pin the full 40-hex commit SHA (git rev-parse <short> in a clone) or a tag",
            ) from exc
        return (pin if spec.tracking == "release" else commit), commit
    commit = tag_commit(repo_url, pin, cfg, timeout)
    return (pin if spec.tracking == "release" else commit), commit


def _indexed_pin(spec: SourceSpec, repo_url: str, pin: str, cfg: UpstreamConfig) -> UpstreamVersion | None:
    """The branch head as a probe that read `pin` from the release index there; None when the source has no
    index, the head has none, or it lists another release (the pin is then a tag or commit)."""
    if not spec.version_index or not pin.startswith(TAG_PREFIX) or SHA_RE.match(pin):
        return None
    head = branch_commit(repo_url, spec.branch, cfg, cfg.probe_timeout)
    data = read_index(repo_url, head, spec, cfg, cfg.probe_timeout)
    if data is None or indexed_release(data, spec, f"{spec.name}: {spec.version_index} at {head[:12]}").label != pin:
        return None
    return UpstreamVersion(spec.name, spec.tracking, pin, head, index_url(spec, head), datetime.now(UTC))


def feed_target(spec: SourceSpec, workdir: Path) -> Path:
    """Where a feed source's file goes in the work folder (its path in the registry)."""
    if not spec.paths:
        raise FetchError(f"{spec.name}: a feed source needs its file path in `paths`")
    rel = PurePosixPath(spec.paths[0])
    if rel.is_absolute() or ".." in rel.parts or any(ch in str(rel) for ch in "*?["):
        raise FetchError(f"{spec.name}: feed path {spec.paths[0]!r} must be a plain relative file path")
    return workdir.joinpath(*rel.parts)


def fetch(
    spec: SourceSpec, version: UpstreamVersion, cfg: UpstreamConfig, workdir: Path, pin: str | None = None
) -> FetchResult:
    """The source's files at `version` (or at `pin`: an older commit SHA or tag) under workdir.

    For git sources workdir becomes a sparse checkout of exactly that commit (of the versioned files a release
    index names, when the probe read the version from one). A feed is downloaded to workdir/<paths[0]> and its
    version re-read from the downloaded bytes, since the feed may have moved on since the probe.
    """
    started = time.monotonic()
    if spec.tracking == "feed":
        if pin:
            raise FetchError(f"{spec.name}: a feed keeps no history, so it cannot be pinned to {pin!r}")
        url = cfg.feed_url(spec)
        if not url:
            raise FetchError(f"{spec.name}: feed tracking needs `feed_url` in the registry")
        target = download(url, feed_target(spec, workdir), cfg, cfg.fetch_timeout)
        fetched = feed_version(target.read_bytes(), spec.version_field)
        if fetched != version.version:
            log.info(
                "feed moved since the probe", extra={"source": spec.name, "probed": version.version, "fetched": fetched}
            )
        result = FetchResult(root=workdir, version=fetched, commit=None)
    else:
        repo_url = cfg.repo_url(spec)
        if not repo_url:
            raise FetchError(f"{spec.name}: no repository URL in the registry")
        indexed = _indexed_pin(spec, repo_url, pin, cfg) if pin else None
        if indexed is not None:  # the release the index at the head lists (a sensor's run): it may have no tag yet
            version, pin = indexed, None
        if pin:
            label, commit = _resolve_pin(spec, repo_url, pin, cfg, cfg.probe_timeout)
        elif version.commit:
            label, commit = version.version, version.commit
        else:
            raise FetchError(f"{spec.name}: the probe recorded no commit to fetch")
        if not pin and from_index(spec, version.url):
            fetch_indexed(spec, repo_url, label, commit, workdir, cfg)
        else:
            checkout(repo_url, commit, spec.paths, workdir, cfg.fetch_timeout, cfg.policy)
        result = FetchResult(root=workdir, version=label, commit=commit)
    log.info(
        "fetched upstream",
        extra={
            "source": spec.name,
            "version": result.version,
            "commit": result.commit,
            "seconds": round(time.monotonic() - started, 2),
        },
    )
    return result
