"""How secrag reaches upstreams: hosts, limits, timeouts and per-source URL overrides (mirrors)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .registry import SourceSpec

if TYPE_CHECKING:
    from secrag.settings import Settings


DEFAULT_HOSTS: tuple[str, ...] = (
    "github.com",
    "api.github.com",
    "codeload.github.com",
    "objects.githubusercontent.com",
    "raw.githubusercontent.com",
    "www.cisa.gov",
    "d3fend.mitre.org",
)
DEFAULT_API_BASE = "https://api.github.com"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def _frozen(mapping: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class UpstreamConfig:
    """Everything the probes and fetchers need; built once from Settings, passed explicitly."""

    github_api_base: str = DEFAULT_API_BASE
    github_token: str | None = None
    allowed_hosts: frozenset[str] = frozenset(DEFAULT_HOSTS)
    allow_loopback: bool = False
    allow_file: bool = False
    max_bytes: int = 100 * 1024 * 1024
    probe_timeout: float = 20.0
    fetch_timeout: float = 600.0
    repo_overrides: Mapping[str, str] = field(default_factory=lambda: _frozen(None))
    feed_overrides: Mapping[str, str] = field(default_factory=lambda: _frozen(None))
    max_attempts: int = 4
    retry_base: float = 0.5  # seconds; doubled per attempt, plus jitter
    retry_after_cap: float = 60.0  # longest Retry-After the fetcher is willing to honour

    def __post_init__(self) -> None:
        hosts = frozenset(h.lower().rstrip(".") for h in self.allowed_hosts)
        object.__setattr__(self, "allowed_hosts", hosts)
        object.__setattr__(self, "repo_overrides", _frozen(self.repo_overrides))
        object.__setattr__(self, "feed_overrides", _frozen(self.feed_overrides))
        object.__setattr__(self, "github_api_base", self.github_api_base.rstrip("/"))

    @classmethod
    def online(cls, settings: Settings) -> UpstreamConfig:
        """The configuration for the real upstreams (pipeline.sources.configure adds a snapshot mirror)."""
        hosts = set(DEFAULT_HOSTS) | {h for h in settings.http_allowed_hosts if h}
        api_host = urlsplit(settings.github_api_base).hostname
        if api_host and urlsplit(settings.github_api_base).scheme == "https":
            hosts.add(api_host)  # an explicitly configured API base (GitHub Enterprise) is trusted
        return cls(
            github_api_base=settings.github_api_base,
            github_token=settings.github_token,
            allowed_hosts=frozenset(hosts),
            allow_loopback=settings.http_allow_loopback,
            allow_file=settings.http_allow_file,
            max_bytes=settings.http_max_bytes,
            probe_timeout=settings.probe_timeout,
            fetch_timeout=settings.fetch_timeout,
        )

    def with_mirror(self, repos: Mapping[str, str], feeds: Mapping[str, str], api_base: str) -> UpstreamConfig:
        """A copy that reads git repos, feeds and the releases API from a local mirror."""
        return replace(self, repo_overrides=repos, feed_overrides=feeds, github_api_base=api_base, allow_file=True)

    def repo_url(self, spec: SourceSpec) -> str:
        """Git URL of the source's repository, mirror first."""
        return self.repo_overrides.get(spec.name) or spec.repo

    def feed_url(self, spec: SourceSpec) -> str:
        """URL of the source's feed, mirror first."""
        return self.feed_overrides.get(spec.name) or spec.feed_url

    def is_api_url(self, url: str) -> bool:
        """Whether url is on the GitHub API (the only place the token may be sent)."""
        target = urlsplit(url)
        for base in {self.github_api_base, DEFAULT_API_BASE}:
            api = urlsplit(base)
            secure = api.scheme == "https" or (self.allow_loopback and api.hostname in LOOPBACK_HOSTS)
            if (
                secure
                and target.scheme == api.scheme
                and target.hostname == api.hostname
                and target.port == api.port
                and target.path.startswith(api.path)
            ):
                return True
        return False
