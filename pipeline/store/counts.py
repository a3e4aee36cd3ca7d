"""Per-source counts the API's /v1/stats reads (migration 0007), refreshed where the data changes:
in the transaction that publishes a source, and after an embedding pass."""

from __future__ import annotations

import psycopg

from secrag.db.queries import Queries


def refresh_counts(q: Queries, conn: psycopg.Connection, source: str) -> None:
    """Recount one source's documents, chunks and per-model vectors (call inside a transaction)."""
    params = {"source": source}
    conn.execute(q.refresh_source_counts, params)
    conn.execute(q.clear_source_model_counts, params)
    conn.execute(q.refresh_source_model_counts, params)


def refresh_all_counts(q: Queries, conn: psycopg.Connection) -> None:
    with conn.transaction():
        for (source,) in conn.execute(q.all_source_names).fetchall():
            refresh_counts(q, conn, source)
