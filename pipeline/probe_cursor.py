"""The source sensor's cursor: the last version its probe saw, with what the next probe needs (the answer's
validators and the API's rate limit), as JSON. A cursor written before (the bare version) still reads."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from secrag.net.rate_limits import RateLimit

from .sources.interface import UpstreamVersion

_NEVER = datetime.fromtimestamp(0, UTC)


def encode_cursor(seen: UpstreamVersion) -> str:
    rate = [seen.rate.limit, seen.rate.remaining, seen.rate.reset_at] if seen.rate else None
    return json.dumps(
        {
            "version": seen.version,
            "commit": seen.commit,
            "url": seen.url,
            "tracking": seen.tracking,
            "etag": seen.etag,
            "last_modified": seen.last_modified,
            "validated": seen.validated,
            "rate": rate,
        },
        separators=(",", ":"),
    )


def decode_cursor(source: str, cursor: str | None) -> UpstreamVersion | None:
    """What the last probe saw (None before the first one)."""
    if not cursor:
        return None
    try:
        raw = json.loads(cursor)
    except ValueError:
        raw = None
    if not isinstance(raw, dict):  # the bare version of an older cursor: no validators
        return UpstreamVersion(source, "", cursor, None, "", _NEVER)
    rate = raw.get("rate")
    return UpstreamVersion(
        source=source,
        tracking=str(raw.get("tracking") or ""),
        version=str(raw["version"]),
        commit=raw.get("commit"),
        url=str(raw.get("url") or ""),
        checked_at=_NEVER,  # a probe that reuses this version stamps its own time
        etag=raw.get("etag"),
        last_modified=raw.get("last_modified"),
        validated=str(raw.get("validated") or ""),
        rate=RateLimit(int(rate[0]), int(rate[1]), float(rate[2])) if rate else None,
    )


def rate_limited(seen: UpstreamVersion | None, source: str, reset_at: float | None) -> UpstreamVersion:
    """The cursor's version after the API refused a probe for its rate limit: nothing left until reset_at."""
    base = seen or UpstreamVersion(source, "", "", None, "", _NEVER)
    limit = base.rate.limit if base.rate else 0
    return replace(base, rate=RateLimit(limit, 0, reset_at) if reset_at is not None else None)
