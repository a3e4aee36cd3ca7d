"""Which URLs secrag may request: checked before every request and every redirect it follows."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from urllib.parse import SplitResult, unquote, urlsplit
from urllib.request import url2pathname

from secrag.errors import FetchError

from .upstream import LOOPBACK_HOSTS, UpstreamConfig

# Numeric host spellings resolvers accept besides dotted quads (2130706433, 0x7f.1, 017700000001).
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+))*$", re.IGNORECASE)
_HOSTS_HINT = "add the host to SECRAG_HTTP_ALLOWED_HOSTS if it is a trusted upstream"


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return bool(_NUMERIC_HOST.match(host))
    return True


def check_url(url: str, cfg: UpstreamConfig) -> SplitResult:
    """The parsed URL when cfg allows requesting it; FetchError saying why otherwise."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").rstrip(".")
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise FetchError(f"refused malformed URL {url!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme == "file":
        if not cfg.allow_file:
            raise FetchError(
                f"refused {url}: file:// URLs are not allowed", hint="set SECRAG_HTTP_ALLOW_FILE=true for local mirrors"
            )
        if host not in ("", "localhost"):
            raise FetchError(f"refused {url}: file:// URLs must not name a host")
        return parts
    if scheme not in ("https", "http"):
        raise FetchError(f"refused {url}: scheme {scheme or '(none)'!r} is not allowed; use https")
    if parts.username is not None or parts.password is not None:
        raise FetchError(
            f"refused {urlsplit(url)._replace(netloc=host).geturl()}: credentials in URLs are not allowed",
            hint="set GITHUB_TOKEN instead",
        )
    if not host:
        raise FetchError(f"refused {url}: no host")
    loopback = cfg.allow_loopback and host in LOOPBACK_HOSTS
    if _is_ip_literal(host) and not loopback:
        raise FetchError(f"refused {url}: IP-literal hosts are not allowed", hint=_HOSTS_HINT)
    if scheme == "http" and not loopback:
        raise FetchError(f"refused {url}: plain http is not allowed; use https")
    if not loopback and host not in cfg.allowed_hosts:
        raise FetchError(f"refused {url}: host {host} is not on the allowlist", hint=_HOSTS_HINT)
    return parts


def file_path(url: str) -> Path:
    """The local path a file:// URL names."""
    return Path(url2pathname(unquote(urlsplit(url).path)))
