"""What every upstream implementation offers: probe a source's version, fetch its files at a version.

Two implementations: `online.OnlineUpstream` (GitHub, releases, feeds, through the URL policy)
and `snapshot.SnapshotUpstream` (local mirrors of a snapshot folder, for air-gapped sites and
tests). `configure.upstream_for(settings)` picks one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from secrag.net.rate_limits import RateLimit

from .registry import SourceSpec
from .upstream import UpstreamConfig


@dataclass(frozen=True)
class UpstreamVersion:
    """What one probe saw upstream: the version to record and, for git sources, its commit.

    A probe over HTTP (a release, a feed) also keeps the answer's validators (`etag`, `last_modified`, for the
    URL `validated`), so the next probe can ask conditionally, and the API's rate limit as the answer stated it;
    `not_modified`: the upstream answered 304 and the version is the one the previous probe saw.
    """

    source: str
    tracking: str
    version: str
    commit: str | None
    url: str
    checked_at: datetime
    etag: str | None = None
    last_modified: str | None = None
    validated: str = ""
    rate: RateLimit | None = None
    not_modified: bool = False

    def validators(self, url: str) -> dict[str, str]:
        """Conditional-request headers for url from this probe's answer (none for another URL)."""
        if url != self.validated:
            return {}
        headers = {"If-None-Match": self.etag} if self.etag else {}
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


@dataclass(frozen=True)
class FetchResult:
    """Where the fetched files are and which upstream version they are (what gets recorded)."""

    root: Path
    version: str
    commit: str | None


class Upstream(Protocol):
    """Where sources come from."""

    @property
    def config(self) -> UpstreamConfig:
        """Limits and timeouts (probe_timeout, fetch_timeout) this upstream works within."""
        ...

    def describe(self) -> str:
        """One line for logs and the UI: which upstreams these are."""
        ...

    def with_config(self, config: UpstreamConfig) -> Upstream:
        """The same upstream under other limits and timeouts."""
        ...

    def probe(
        self, spec: SourceSpec, timeout: float | None = None, known: UpstreamVersion | None = None
    ) -> UpstreamVersion:
        """The source's current version, within timeout (default config.probe_timeout) seconds; with `known`
        (the previous probe's answer) a conditional request where the upstream allows one."""
        ...

    def fetch(self, spec: SourceSpec, version: UpstreamVersion, workdir: Path, pin: str | None = None) -> FetchResult:
        """The source's files at version (or at pin: an older commit SHA or tag) under workdir."""
        ...
