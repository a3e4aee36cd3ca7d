"""How often sources are probed and how fresh they must be: the default poll interval per kind of tracking,
the floor under every interval, the jitter that spreads the probes, and the one freshness verdict that the
Dagster check and GET /v1/sources both give."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType

POLL_FLOOR_SECONDS = 60  # no poll interval, the registry's or the override, may be shorter
POLL_JITTER = 0.1  # each source's interval is moved by up to this share, the same way on every load
# A registry entry without `poll_interval`: git ls-remote is cheap; releases and feeds are conditional requests.
DEFAULT_POLL_SECONDS: Mapping[str, int] = MappingProxyType(
    {"commit": 180, "release": 600, "feed": 300, "bundled": 86400}
)
# Besides two poll intervals, the time one refresh of a large source may take once its new version is seen.
REFRESH_ALLOWANCE_SECONDS = 600


def window_seconds(poll_interval: int) -> int:
    """How long a source may go without an answered probe, or leave a newer upstream version unpublished."""
    return 2 * poll_interval + REFRESH_ALLOWANCE_SECONDS


@dataclass(frozen=True)
class SourceClock:
    """What the verdict reads of a source: its poll interval and its `sources` row's versions and times."""

    poll_interval: int | None
    current_version: str | None
    seen_version: str | None
    checked_at: datetime | None  # the last answered probe
    seen_since: datetime | None  # when the upstream first showed seen_version


@dataclass(frozen=True)
class Verdict:
    """Fresh or not, and why not (a fixed text: callers of the API read it)."""

    fresh: bool
    reason: str | None
    window_seconds: int


def verdict(clock: SourceClock, now: datetime) -> Verdict | None:
    """Fresh = something is published, the upstream answered a probe within the window, and no newer version
    has waited longer than the window to be published. None for a source that is not polled (user folders)."""
    if clock.poll_interval is None:
        return None
    window = window_seconds(clock.poll_interval)
    late = timedelta(seconds=window)
    if not clock.current_version:
        return Verdict(False, "nothing published yet", window)
    if clock.checked_at is None or now - clock.checked_at > late:
        return Verdict(False, f"the upstream has not answered a probe for over {window} s", window)
    newer = clock.seen_version and clock.seen_version != clock.current_version
    if newer and (clock.seen_since is None or now - clock.seen_since > late):
        return Verdict(False, f"a newer upstream version has waited over {window} s to be published", window)
    return Verdict(True, None, window)
