"""The online upstream: git repositories, GitHub releases and feeds, reached through the URL policy."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .fetch import fetch
from .interface import FetchResult, UpstreamVersion
from .probes import probe
from .registry import SourceSpec
from .upstream import UpstreamConfig


@dataclass(frozen=True)
class OnlineUpstream:
    """Probes with `git ls-remote` and the releases API; fetches sparse checkouts and feed downloads."""

    config: UpstreamConfig

    def describe(self) -> str:
        overrides = len(self.config.repo_overrides) + len(self.config.feed_overrides)
        return "online upstreams" + (f" ({overrides} URL overrides)" if overrides else "")

    def with_config(self, config: UpstreamConfig) -> OnlineUpstream:
        return replace(self, config=config)

    def probe(
        self, spec: SourceSpec, timeout: float | None = None, known: UpstreamVersion | None = None
    ) -> UpstreamVersion:
        return probe(spec, self.config, timeout, known)

    def fetch(self, spec: SourceSpec, version: UpstreamVersion, workdir: Path, pin: str | None = None) -> FetchResult:
        return fetch(spec, version, self.config, workdir, pin)
