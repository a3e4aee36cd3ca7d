"""The core download client against a loopback server: vetted addresses and a hard deadline."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import SplitResult

import pytest

from secrag.errors import FetchError, FetchTimeout, FetchTooLarge
from secrag.net.download_limits import DownloadLimits
from secrag.net.downloads import get_bytes
from secrag.net.url_policy import UrlPolicy, parse_url
from tests.plugins.upstream import LoopbackPolicy, LoopbackServer

FAST = DownloadLimits(retry_base=0.05, max_attempts=2)


@dataclass(frozen=True)
class FakeDns(UrlPolicy):
    """The production policy, with a resolver that answers `answers` for every name, and http allowed
    for the allowlisted test hosts (so the loopback server can stand in for them)."""

    answers: tuple[str, ...] = ("127.0.0.1",)
    loopback_ok: bool = False

    def check(self, url: str) -> SplitResult:
        parts, host = parse_url(url)
        if parts.scheme == "http" and host in self.allowed_hosts:
            return parts
        return super().check(url)

    def resolve(self, host: str, port: int) -> list[str]:
        return list(self.answers)

    def address_allowed(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return (self.loopback_ok and address.is_loopback) or super().address_allowed(address)


def _as_host(url: str, host: str) -> str:
    return url.replace("127.0.0.1", host, 1)


@pytest.mark.parametrize(
    "answers",
    [
        ("127.0.0.1",),
        ("10.0.0.7",),
        ("169.254.169.254",),
        ("::1",),
        ("::ffff:127.0.0.1",),
        ("93.184.216.34", "127.0.0.1"),
    ],
)
def test_a_host_resolving_to_a_non_public_address_is_refused_before_connecting(
    http_server: LoopbackServer, answers: tuple[str, ...]
) -> None:
    url = _as_host(http_server.bytes("/feed.json", b"{}"), "feeds.upstream.test")
    policy = FakeDns(allowed_hosts=frozenset({"feeds.upstream.test"}), answers=answers)
    with pytest.raises(FetchError, match="not a public address"):
        get_bytes(url, policy, FAST, timeout=5)
    assert http_server.hits("/feed.json") == []


def test_the_connection_goes_to_the_vetted_address(http_server: LoopbackServer) -> None:
    """Nothing else resolves feeds.upstream.test: the answer can only come from the vetted address."""
    url = _as_host(http_server.bytes("/feed.json", b"ok"), "feeds.upstream.test")
    policy = FakeDns(allowed_hosts=frozenset({"feeds.upstream.test"}), loopback_ok=True)
    assert get_bytes(url, policy, FAST, timeout=5) == b"ok"
    assert http_server.hits("/feed.json")[0].headers["Host"].startswith("feeds.upstream.test:")


def test_every_redirect_hop_is_vetted_again(http_server: LoopbackServer) -> None:
    target = _as_host(http_server.bytes("/inner", b"secret"), "evil.upstream.test")
    url = _as_host(http_server.redirect("/outer", target), "feeds.upstream.test")
    policy = FakeDns(allowed_hosts=frozenset({"feeds.upstream.test"}), loopback_ok=True)
    with pytest.raises(FetchError, match="refused http://evil.upstream.test"):
        get_bytes(url, policy, FAST, timeout=5)
    assert http_server.hits("/inner") == []


@pytest.mark.parametrize("body", [b"x" * 4, b"x" * 400], ids=["slow-headers", "slow-body"])
def test_a_slow_drip_server_hits_the_deadline(http_server: LoopbackServer, body: bytes) -> None:
    # A byte every 0.25 s: each read gets one well within the 1.5 s read timeout, so only the whole
    # download's deadline can end it; the whole answer would take 11 s or 110 s.
    url = http_server.drip("/drip", body, every=0.25)
    with pytest.raises(FetchTimeout):
        get_bytes(url, LoopbackPolicy(), DownloadLimits(max_attempts=1), timeout=1.5)
    # The deadline came first: the server had not sent the whole answer.
    assert http_server.hits("/drip") and http_server.statuses("/drip") == []


@pytest.mark.parametrize(
    "url", ["https://git\thub.com/x", "https://github.com/x\n", "https://github.com/a b", "https://github.com/\x00"]
)
def test_urls_with_whitespace_or_control_characters_are_fetch_errors(url: str) -> None:
    with pytest.raises(FetchError, match="malformed URL"):
        get_bytes(url, UrlPolicy(), FAST, timeout=1)


def test_cap_errors_say_which_cap(http_server: LoopbackServer) -> None:
    url = http_server.oversized("/big", 4096)
    with pytest.raises(FetchTooLarge):
        get_bytes(url, LoopbackPolicy(), DownloadLimits(max_bytes=1024), timeout=5)
