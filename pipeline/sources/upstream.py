"""How secrag reaches upstreams: URL policy, limits, timeouts, the GitHub API and per-source URL overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from secrag.net.download_limits import DownloadLimits
from secrag.net.url_policy import UrlPolicy

from .registry import SourceSpec

if TYPE_CHECKING:
    from secrag.settings import Settings


DEFAULT_API_BASE = "https://api.github.com"


def _frozen(mapping: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class UpstreamConfig:
    """Everything the probes and fetchers need; built once from Settings, passed explicitly.

    `repo_overrides` / `feed_overrides` point sources at other URLs (an internal git mirror,
    a snapshot's local mirror); the URL policy still applies to them.
    """

    github_api_base: str = DEFAULT_API_BASE
    github_token: str | None = None
    policy: UrlPolicy = field(default_factory=UrlPolicy)
    limits: DownloadLimits = field(default_factory=DownloadLimits)
    probe_timeout: float = 20.0
    fetch_timeout: float = 600.0
    repo_overrides: Mapping[str, str] = field(default_factory=lambda: _frozen(None))
    feed_overrides: Mapping[str, str] = field(default_factory=lambda: _frozen(None))

    def __post_init__(self) -> None:
        object.__setattr__(self, "repo_overrides", _frozen(self.repo_overrides))
        object.__setattr__(self, "feed_overrides", _frozen(self.feed_overrides))
        object.__setattr__(self, "github_api_base", self.github_api_base.rstrip("/"))

    @classmethod
    def online(cls, settings: Settings) -> UpstreamConfig:
        """The configuration for the real upstreams."""
        return cls(
            github_api_base=settings.github_api_base,
            github_token=settings.github_token,
            policy=UrlPolicy.from_settings(settings),
            limits=DownloadLimits(max_bytes=settings.http_max_bytes),
            probe_timeout=settings.probe_timeout,
            fetch_timeout=settings.fetch_timeout,
        )

    def with_mirror(self, repos: Mapping[str, str], feeds: Mapping[str, str], api_base: str) -> UpstreamConfig:
        """A copy that reads git repos, feeds and the releases API from local (file://) mirrors."""
        policy = replace(self.policy, allow_file=True)
        return replace(self, repo_overrides=repos, feed_overrides=feeds, github_api_base=api_base, policy=policy)

    def repo_url(self, spec: SourceSpec) -> str:
        """Git URL of the source's repository, override first."""
        return self.repo_overrides.get(spec.name) or spec.repo

    def feed_url(self, spec: SourceSpec) -> str:
        """URL of the source's feed, override first."""
        return self.feed_overrides.get(spec.name) or spec.feed_url

    def is_api_url(self, target: SplitResult) -> bool:
        """Whether target is on the GitHub API over a private channel (the only place the token may go)."""
        for base in {self.github_api_base, DEFAULT_API_BASE}:
            api = urlsplit(base)
            if (
                self.policy.is_private_channel(api)
                and target.scheme == api.scheme
                and target.hostname == api.hostname
                and target.port == api.port
                and target.path.startswith(api.path)
            ):
                return True
        return False

    def api_headers(self, target: SplitResult) -> dict[str, str]:
        """Extra headers for a request to target: GitHub's media type and token on API URLs only."""
        if not self.is_api_url(target):
            return {}
        headers = {"Accept": "application/vnd.github+json"}
        if self.github_token:
            headers["Authorization"] = f"Bearer {self.github_token}"
        return headers
