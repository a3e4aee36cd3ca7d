"""The opt-in query log: one row per search or plan (REST and MCP), with its attention flags
(serving/feedback/attention.py), through a separate one-connection writer pool."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from secrag.db import database
from secrag.db.queries import Queries
from secrag.errors import ConfigError, DatabaseError
from serving.access.replica import read_lag
from serving.contract.query_classes import is_logged_class

log = logging.getLogger(__name__)


class QueryLog:
    """Writes as secrag_querylog (INSERT on query_log, nothing else); failures are logged, never raised."""

    def __init__(self, url: str, queries: Queries, *, with_text: bool) -> None:
        self.url = url
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

    def open(self, connect_timeout: int = 5) -> None:
        """Open the writer pool, after refusing a read-only standby (every write would fail)."""
        self.refuse_standby(connect_timeout)
        self.pool.open(wait=False)

    def refuse_standby(self, connect_timeout: int) -> None:
        """ConfigError when the query log's server is a hot standby (SECRAG_READER_DATABASE_URL may name one,
        the query log needs the primary); an unreachable server only warns (its writes are logged failures)."""
        try:
            with database.connect(self.url, timeout=connect_timeout, autocommit=True) as conn:
                standby = read_lag(conn, self.queries).standby
        except DatabaseError as exc:
            log.warning("cannot check the query log's database yet", extra={"error": exc.one_line()})
            return
        if standby:
            raise ConfigError(
                f"the query log's database {database.describe(self.url)} is a read-only standby",
                hint="set SECRAG_QUERYLOG_DATABASE_URL to the primary (as secrag_querylog), or turn "
                "SECRAG_QUERY_LOG off on instances that read a replica",
            )

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
