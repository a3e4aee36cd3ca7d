"""An upstream API's rate limit as its response headers state it (GitHub's `x-ratelimit-*`), and whether a
caller holding a reserve must wait before its next request."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from secrag.net.download_limits import retry_after

# Requests left that a poller keeps back: each poller stops at this many, so pollers that each learn the
# count from their own last answer (one per source) together stay under the limit while they are fewer.
RESERVE = 10
_WAIT_CAP = 24 * 3600.0


@dataclass(frozen=True)
class RateLimit:
    """Requests left in the current window, the window's size and when it resets (epoch seconds)."""

    limit: int
    remaining: int
    reset_at: float

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> RateLimit | None:
        """The limit an answer states (header names in any case), or None when it states none."""
        low = {k.lower(): v for k, v in headers.items()}
        try:
            return cls(
                int(low["x-ratelimit-limit"]), int(low["x-ratelimit-remaining"]), float(low["x-ratelimit-reset"])
            )
        except (KeyError, ValueError):
            return None

    def wait(self, now: float | None = None, reserve: int = RESERVE) -> float:
        """Seconds to wait before the next request (0: go ahead): until the reset once only the reserve is left."""
        now = time.time() if now is None else now
        return max(0.0, self.reset_at - now) if self.remaining <= reserve else 0.0


def refused_until(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """When an answer that refused a request for the rate limit says to come back (epoch seconds)."""
    now = time.time() if now is None else now
    low = {k.lower(): v for k, v in headers.items()}
    after = retry_after(low.get("retry-after"), _WAIT_CAP)
    if after is not None:
        return now + after
    stated = RateLimit.from_headers(low)
    return stated.reset_at if stated is not None else None
