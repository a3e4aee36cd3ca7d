"""How often sources are probed and how fresh they must be: the default poll interval per kind of tracking,
the floor under every interval, the jitter that spreads the probes, and the one freshness verdict that the
Dagster check and GET /v1/sources both give."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

POLL_FLOOR_SECONDS = 60  # no poll interval, the registry's or the override, may be shorter
POLL_JITTER = 0.1  # each source's interval is moved by up to this share, the same way on every load
# A registry entry without `poll_interval`: git ls-remote is cheap; releases and feeds are conditional requests.
DEFAULT_POLL_SECONDS: Mapping[str, int] = MappingProxyType(
    {"commit": 180, "release": 600, "feed": 300, "bundled": 86400}
)
