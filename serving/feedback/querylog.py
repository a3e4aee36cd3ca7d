"""The opt-in query log: one row per search or plan (REST and MCP), with its attention flags
(serving/feedback/attention.py), through a separate one-connection writer pool."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from secrag.db.queries import Queries
from serving.contract.query_classes import is_logged_class

log = logging.getLogger(__name__)


class QueryLog:
    """Writes as secrag_querylog (INSERT on query_log, nothing else); failures are logged, never raised."""

    def __init__(self, url: str, queries: Queries, *, with_text: bool) -> None:
        self.queries = queries
        self.with_text = with_text
        self.pool = ConnectionPool(
            url,
            min_size=0,
            max_size=1,
            timeout=2.0,
            open=False,
            name="secrag-querylog",
            kwargs={"connect_timeout": 3, "autocommit": True},
        )

    def open(self) -> None:
        self.pool.open(wait=False)

    def close(self) -> None:
        self.pool.close()

    def write(
        self,
        *,
        endpoint: str,
        query_type: str | None,
        query_text: str | None,
        top_score: float | None,
        result_count: int,
        latency_ms: float,
        details: dict[str, Any],
        attention: list[str] | None = None,
    ) -> None:
        """One row; `query_type` is a query shape or type (serving/contract/query_classes.py), or None."""
        if query_type is not None and not is_logged_class(query_type):
            raise ValueError(
                f"query class {query_type!r} is not in serving/contract/query_classes.py"
            )  # a bug, not I/O
        params = {
            "endpoint": endpoint,
            "query_type": query_type,
            "query_text": query_text if self.with_text else None,
            "top_score": top_score,
            "result_count": result_count,
            "latency_ms": latency_ms,
            "details": Jsonb(details),
            "attention": attention or [],
        }
        try:
            with self.pool.connection() as conn:
                conn.execute(self.queries.log_query, params)
        except (psycopg.Error, Exception) as exc:  # noqa: BLE001 - logging must never fail a search
            log.warning("query log write failed", extra={"error": type(exc).__name__})
