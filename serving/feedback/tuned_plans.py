"""The plans in force: the plans file with the score thresholds `secrag tune apply` approved in the store
(tuned_value), re-read every TUNED_TTL seconds, so every API worker and pod serves an approved change
within seconds of it, without a restart."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout
from pydantic import ValidationError

from secrag.db.queries import Queries
from serving.contract.thresholds import TypeThresholds
from serving.plans.plans_file import PlansConfig
from serving.search.catalog import Cached

log = logging.getLogger(__name__)
TUNED_TTL = 2.0  # one read of a table of at most a few rows per worker every two seconds
SCORE_THRESHOLD = "score_threshold"  # the one tuned setting today (tuned_value.setting's CHECK)


def read_thresholds(conn: psycopg.Connection, query: str) -> dict[str, float]:
    """The approved score thresholds by query type; `query` is serving.sql's `tuned_values`."""
    return {str(t): float(v) for t, v in conn.execute(query, {"setting": SCORE_THRESHOLD})}


def stored_thresholds(pool: ConnectionPool, queries: Queries) -> dict[str, float]:
    """`read_thresholds` on a pooled connection (what TunedPlans reads in the API and `secrag mcp`)."""
    with pool.connection() as conn:
        return read_thresholds(conn, queries.tuned_values)


@dataclass
class TunedPlans:
    """`base` (the plans file, validated at start-up) with the store's tuned thresholds; `read` returns
    them by query type (`stored_thresholds`)."""

    base: PlansConfig
    read: Callable[[], Mapping[str, float]]
    _rows: Cached = field(default_factory=lambda: Cached(TUNED_TTL))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _built: tuple[tuple[tuple[str, float], ...], PlansConfig] | None = None

    def current(self) -> PlansConfig:
        """The plans in force (the store is read at most every TUNED_TTL seconds; when a read fails, the
        last values read, or the plans file's, keep serving)."""
        try:
            rows = self._rows.get(lambda: dict(self.read()))
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            log.warning(
                "cannot read the tuned thresholds; serving the last ones read", extra={"error": type(exc).__name__}
            )
            rows = self._rows.value or {}
        key = tuple(sorted(rows.items()))
        with self._lock:
            if self._built is None or self._built[0] != key:
                self._built = key, self._apply(rows)
            return self._built[1]

    def _apply(self, rows: Mapping[str, float]) -> PlansConfig:
        """The base with each valid tuned threshold; a row the thresholds model no longer admits (an unknown
        query type, a value outside [0, 1]: serving/contract/thresholds.py) is logged and ignored rather than
        failing every plan."""
        usable, refused = TypeThresholds.admitted(rows)
        for query_type, value in refused.items():
            log.warning("ignoring the tuned threshold %s=%s: not a query type or not in [0, 1]", query_type, value)
        if not usable:
            return self.base
        try:
            return PlansConfig.model_validate(self.base.with_thresholds(usable))
        except ValidationError:
            log.exception("the tuned thresholds %s do not validate; serving the plans file's", usable.root)
            return self.base
