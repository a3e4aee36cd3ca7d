"""The limits of one download call: its caps (bytes, attempts, backoff, longest Retry-After honoured),
its wall-clock budget (retries and redirects included), and what marks a failure as worth a retry."""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class DownloadLimits:
    """Caps of one download call."""

    max_bytes: int = 100 * 1024 * 1024
    max_attempts: int = 4
    retry_base: float = 0.5  # seconds; doubled per attempt, plus up to as much jitter
    retry_after_cap: float = 60.0  # longest Retry-After the client is willing to honour


class Retryable(Exception):
    """A transient failure: 429, 5xx, a timeout or a dropped connection."""

    def __init__(self, reason: str, retry_after: float | None = None, *, timeout: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.timeout = timeout


@dataclass(frozen=True)
class Budget:
    """The wall-clock budget of one call, retries and redirects included."""

    total: float
    deadline: float

    @classmethod
    def start(cls, seconds: float) -> Budget:
        return cls(seconds, time.monotonic() + seconds)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def op_timeout(self) -> float:
        # Half the budget per network operation leaves room for one retry after a stall.
        return max(0.01, min(self.remaining(), self.total / 2))


def retry_after(value: str | None, cap: float) -> float | None:
    """Seconds a Retry-After header asks for (delta or HTTP date), capped; None when absent or unreadable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(0.0, min(seconds, cap))
