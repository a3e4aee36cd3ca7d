"""The change feed: one page of what publishes added, modified and removed, newest first, of the documents the
caller may see (the `visible` check of every document read, on the entry and on the document)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from secrag.db.queries import Queries
from serving.access.keys import Principal
from serving.contract.changes import ChangesQuery, ChangesResponse, DocumentChange
from serving.contract.errors import NotFound
from serving.search.catalog import Catalog


def since_time(since: str) -> datetime | None:
    """`since` as a time when it reads as ISO 8601 (UTC without an offset); None: it names a version."""
    try:
        at = datetime.fromisoformat(since)
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


@dataclass
class ChangeFeed:
    pool: ConnectionPool
    queries: Queries
    catalog: Catalog

    def __post_init__(self) -> None:
        visible = sql.SQL(self.queries.visible)
        self._page = sql.SQL(self.queries.changes_page).format(visible=visible).as_string()

    def page(self, query: ChangesQuery, principal: Principal) -> ChangesResponse:
        requested = [n.strip() for name in query.sources or () for n in name.split(",") if n.strip()]
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            # No sources named: every entry, each judged by its own access (a folder since emptied included).
            sources = self.catalog.resolve_sources(conn, principal, requested, loc=("query", "sources"))
            since = since_time(query.since) if query.since else None
            if query.since and since is None:
                among = sources or self.catalog.visible_sources(conn, principal)
                found = cur.execute(self.queries.version_published_at, {"version": query.since, "sources": among})
                since = (found.fetchone() or {}).get("published_at")
                if since is None:  # a version these sources never published (a time is checked by its form)
                    raise NotFound(
                        f"{query.since[:80]!r} is neither an ISO 8601 time nor a version published by these sources"
                    )
            params = {
                **principal.params(),
                "sources": sources,
                "since": since,
                "before": int(query.cursor) if query.cursor else None,
                "limit": query.limit,
            }
            rows = cur.execute(self._page, params).fetchall()
        last = rows[-1]["id"] if len(rows) == query.limit else None  # the next page starts after what was read
        return ChangesResponse(
            changes=[
                DocumentChange(**{k: v for k, v in r.items() if k not in ("id", "shown")}) for r in rows if r["shown"]
            ],
            next_cursor=str(last) if last is not None else None,
        )
