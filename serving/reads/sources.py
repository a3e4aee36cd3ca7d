"""GET /v1/sources and GET /v1/stats: each source's state and freshness, and the store's counts, of what
the caller may see."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from secrag import error_kinds
from secrag.db.queries import Queries
from secrag.freshness import SourceClock, verdict
from serving.access.keys import Principal
from serving.contract.responses import Attempt, SourceInfo, SourcesResponse
from serving.reads.stats import LiveCounts, collect_stats
from serving.search.catalog import Catalog
from serving.search.searcher import Searcher
from serving.search.statements import Statements


@dataclass(frozen=True)
class SourceReads:
    pool: ConnectionPool
    queries: Queries
    statements: Statements
    catalog: Catalog

    def sources(self, principal: Principal) -> SourcesResponse:
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            names = self.catalog.visible_sources(conn, principal)
            rows = cur.execute(self.queries.sources_list, {"names": names}).fetchall()
            public = self.catalog.public_sources(conn)
            folders = [n for n in names if n not in public]
            visible: dict[str, int] = {}
            if folders:  # a user folder's records are those the caller may see
                params = {**principal.params(), "names": folders}
                visible = {r["source"]: r["count"] for r in cur.execute(self.statements.stats_documents, params)}
        now = datetime.now(UTC)
        return SourcesResponse(
            sources=[
                _source_info({**r, "record_count": visible.get(r["name"], 0)} if r["name"] in folders else r, now)
                for r in rows
            ]
        )

    def stats(self, principal: Principal, searcher: Searcher, requests: dict[str, Any]) -> dict[str, Any]:
        """The store's counts of what the caller may see, the serving model (`searcher`'s) and the request
        figures; no cache counters (whether a text was searched before is someone else's business)."""
        model_id = searcher.encoder.model_id
        with self.pool.connection() as conn:
            names = self.catalog.visible_sources(conn, principal)
            public = self.catalog.public_sources(conn)
            live = LiveCounts(self.statements, principal.params())
            stats = collect_stats(conn, self.queries, names, model_id, requests, public, live)
        return {**stats, "serving_model": model_id}


def _source_info(r: dict[str, Any], now: datetime) -> SourceInfo:
    clock = SourceClock(
        r["poll_interval"], r["current_version"], r["last_seen_version"], r["last_check_at"], r["seen_since"]
    )
    judged = verdict(clock, now)
    return SourceInfo(
        name=r["name"],
        kind=r["kind"],
        description=r["description"],
        category=r["category"],
        upstream=r["upstream"],
        branch=r["branch"],
        tracking=r["tracking"],
        version=r["current_version"],
        last_seen_version=r["last_seen_version"],
        last_check=r["last_check_at"],
        last_sync=r["last_sync_at"],
        records=r["record_count"],
        state=r["state"],
        error_kind=r["error_kind"],
        last_error=error_kinds.message(r["error_kind"]),
        last_attempt=None
        if r["attempt_at"] is None
        else Attempt(
            at=r["attempt_at"],
            status=r["attempt_status"],
            phase=r["attempt_phase"],
            version=r["attempt_version"],
            error_kind=r["error_kind"],
            reason=error_kinds.message(r["error_kind"]),
        ),
        running_since=r["running_since"],
        last_success=r["last_success_at"],
        poll_interval=r["poll_interval"],
        fresh=judged.fresh if judged else None,
        stale_reason=judged.reason if judged else None,
    )
