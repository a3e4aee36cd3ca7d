"""Which URLs secrag may request: one policy for every outbound request (pipeline and API alike).

The policy is checked before every request and before following every redirect. It allows
https to allowlisted host names only (no IP literals, no credentials in URLs), and file://
only when the configuration asks for local mirrors. Loopback is never allowed here; tests
that talk to a loopback server subclass the policy in their fixtures.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, unquote, urlsplit
from urllib.request import url2pathname

from secrag.errors import FetchError

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

# Numeric host spellings resolvers accept besides dotted quads (2130706433, 0x7f.1, 017700000001).
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+))*$", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_HOSTS_HINT = "add the host to SECRAG_HTTP_ALLOWED_HOSTS if it is a trusted upstream"


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return bool(_NUMERIC_HOST.match(host))
    return True


def _normal_host(host: str) -> str:
    return host.lower().rstrip(".")


def parse_url(url: str) -> tuple[SplitResult, str]:
    """(parts, normalised host) of url; FetchError for any malformed URL (bad port, bad IPv6, ...)."""
    if _CONTROL.search(url):  # urlsplit would silently drop tabs and newlines, httpx would not
        raise FetchError(f"refused malformed URL {url!r}: it contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        host = _normal_host(parts.hostname or "")
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise FetchError(f"refused malformed URL {url!r}: {exc}") from exc
    return parts, host


def trusted_base_host(base_url: str) -> str | None:
    """The host of an operator-configured https base URL (e.g. GitHub Enterprise), else None."""
    parts = urlsplit(base_url)
    return _normal_host(parts.hostname) if parts.scheme == "https" and parts.hostname else None


@dataclass(frozen=True)
class UrlPolicy:
    """https to allowlisted host names; file:// only with allow_file."""

    allowed_hosts: frozenset[str] = frozenset(DEFAULT_HOSTS)
    allow_file: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_hosts", frozenset(_normal_host(h) for h in self.allowed_hosts if h))

    @classmethod
    def from_settings(cls, settings: Settings, extra_bases: Iterable[str] = ()) -> UrlPolicy:
        """The default hosts, SECRAG_HTTP_ALLOWED_HOSTS, and the hosts of configured https base URLs."""
        hosts = set(DEFAULT_HOSTS) | set(settings.http_allowed_hosts)
        for base in (settings.github_api_base, *extra_bases):
            host = trusted_base_host(base)
            if host:
                hosts.add(host)
        return cls(frozenset(hosts), allow_file=settings.http_allow_file)

    def check(self, url: str) -> SplitResult:
        """The parsed URL when this policy allows requesting it; FetchError saying why otherwise."""
        parts, host = parse_url(url)
        scheme = parts.scheme.lower()
        if scheme == "file":
            return self._check_file(url, host, parts)
        if scheme not in ("https", "http"):
            raise FetchError(f"refused {url}: scheme {scheme or '(none)'!r} is not allowed; use https")
        if parts.username is not None or parts.password is not None:
            raise FetchError(
                f"refused {urlsplit(url)._replace(netloc=host).geturl()}: credentials in URLs are not allowed",
                hint="set GITHUB_TOKEN instead",
            )
        if not host:
            raise FetchError(f"refused {url}: no host")
        if _is_ip_literal(host):
            raise FetchError(f"refused {url}: IP-literal hosts are not allowed", hint=_HOSTS_HINT)
        if scheme == "http":
            raise FetchError(f"refused {url}: plain http is not allowed; use https")
        if host not in self.allowed_hosts:
            raise FetchError(f"refused {url}: host {host} is not on the allowlist", hint=_HOSTS_HINT)
        return parts

    def _check_file(self, url: str, host: str, parts: SplitResult) -> SplitResult:
        if not self.allow_file:
            raise FetchError(
                f"refused {url}: file:// URLs are not allowed", hint="set SECRAG_HTTP_ALLOW_FILE=true for local mirrors"
            )
        if host not in ("", "localhost"):
            raise FetchError(f"refused {url}: file:// URLs must not name a host")
        return parts

    def git_protocols(self) -> tuple[str, ...]:
        """Transports git may use (GIT_ALLOW_PROTOCOL): https, and file for local mirrors."""
        return ("https", "file") if self.allow_file else ("https",)

    def is_private_channel(self, parts: SplitResult) -> bool:
        """Whether a credential may travel over this URL's transport (https only)."""
        return parts.scheme == "https"

    def resolve(self, host: str, port: int) -> list[str]:
        """The addresses host resolves to, in the resolver's order."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise FetchError(f"{host}: cannot resolve the host name ({exc})") from exc
        return list(dict.fromkeys(str(info[4][0]) for info in infos))

    def address_allowed(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        """Public unicast only: no loopback, private, link-local, shared, reserved or multicast address."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_global and not address.is_multicast

    def vetted_addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for host; FetchError if any of them is not allowed.

        One refused address refuses the host: an answer mixing public and private addresses is
        what a DNS-rebinding attacker sends.
        """
        addresses = self.resolve(host, port)
        if not addresses:
            raise FetchError(f"{host}: the host name resolves to no address")
        for text in addresses:
            if not self.address_allowed(ipaddress.ip_address(text.split("%", 1)[0])):
                raise FetchError(
                    f"refused {host}: it resolves to {text}, which is not a public address",
                    hint="upstreams must be reachable on public addresses",
                )
        return addresses


def file_path(url: str) -> Path:
    """The local path a file:// URL names."""
    return Path(url2pathname(unquote(urlsplit(url).path)))
