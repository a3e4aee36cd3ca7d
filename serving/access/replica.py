"""Whether the API reads a streaming replica, and how far behind its primary it is (GET /readyz, /metrics).

A publish reaches the API after the standby's replay lag plus the result cache's data-version interval
(serving/search/catalog.py, DATA_VERSION_TTL). SECRAG_REPLICA_MAX_LAG_SECONDS (30 s by default, 0: no limit)
turns an instance whose standby lags more, or cannot say how much, not ready, so a load balancer sends its
callers elsewhere: a standby that stopped replaying (its primary gone, replay paused) ages past it and leaves
the rotation, though it still answers whoever reaches it directly.
The lag is read once per probe or scrape, never per request.

The lag overstates during long write transactions: while a publish streams WAL that is not yet all
replayed, it reads as the age of the last replayed commit, so it climbs with the publish (about its
duration) although the standby is milliseconds behind and nothing committed is missing.
Set the maximum above the longest publish, or expect instances to leave the
load balancer during one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from secrag.db.queries import Queries, one_row

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplicaLag:
    """One reading: `standby` is pg_is_in_recovery(); `seconds` is 0 on a primary, None when a standby has
    replayed no transaction yet (its lag is unknown)."""

    standby: bool
    seconds: float | None

    def exceeds(self, max_seconds: float | None) -> bool:
        """Behind by more than `max_seconds` (None: no limit); an unknown lag counts as too much."""
        if max_seconds is None or not self.standby:
            return False
        return self.seconds is None or self.seconds > max_seconds


def lag_limit(max_lag_seconds: float) -> float | None:
    """SECRAG_REPLICA_MAX_LAG_SECONDS as a limit: 0 is none."""
    return max_lag_seconds or None


def read_lag(conn: psycopg.Connection[Any], queries: Queries) -> ReplicaLag:
    """The lag of the server `conn` is connected to (sql/queries/serving.sql `replica_lag`)."""
    standby, seconds = one_row(conn.execute(queries.replica_lag))
    return ReplicaLag(standby=bool(standby), seconds=None if seconds is None else max(0.0, float(seconds)))


def pooled_lag(pool: ConnectionPool, queries: Queries, timeout: float = 1.0) -> ReplicaLag | None:
    """The lag read on one of the reader pool's connections; None when the database does not answer."""
    try:
        with pool.connection(timeout=timeout) as conn:
            return read_lag(conn, queries)
    except Exception as exc:  # noqa: BLE001 - a probe or a scrape reports, never raises
        log.info("replica lag not read", extra={"error": type(exc).__name__})
        return None
