"""Store statistics: exact counts per source of what a caller may see (/v1/stats), and the store-wide sizes and
vector totals only an operator's scrape of /metrics gets (they count every tenant's rows). Online sources'
counts are kept by the pipeline (source_counts, source_model_counts); user folders, small and
access-controlled, are counted live."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from secrag.db.queries import Queries
from serving.search.statements import Statements

TABLES = [
    "sources",
    "source_versions",
    "documents",
    "chunks",
    "embeddings",
    "embedding_models",
    "mitre_techniques",
    "query_log",
]


def _counted(
    conn: psycopg.Connection, q: Queries, names: list[str], model_id: str
) -> tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, dict[str, int]]]:
    """Documents, chunks, chunks embedded by `model_id` and vectors per model, from the kept counts."""
    p = {"names": names}
    documents: dict[str, int] = {}
    chunks: dict[str, int] = {}
    for source, docs, n in conn.execute(q.stats_counts, p).fetchall():
        documents[source], chunks[source] = docs, n
    embedded: dict[str, int] = {}
    vectors: dict[str, dict[str, int]] = {}
    for source, model, count, with_vector in conn.execute(q.stats_model_counts, p).fetchall():
        vectors.setdefault(source, {})[model] = count
        if model == model_id:
            embedded[source] = with_vector
    return documents, chunks, embedded, vectors


def _live(
    conn: psycopg.Connection, live: LiveCounts, names: list[str], model_id: str
) -> tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, dict[str, int]]]:
    """The same counts computed from the rows (user folders), of the documents the caller may see."""
    p = {**live.principal, "names": names}
    documents: dict[str, int] = dict(conn.execute(live.statements.stats_documents, p).fetchall())
    chunks: dict[str, int] = dict(conn.execute(live.statements.stats_chunks, p).fetchall())
    embedded: dict[str, int] = dict(
        conn.execute(live.statements.stats_embedded_chunks, {**p, "model": model_id}).fetchall()
    )
    vectors: dict[str, dict[str, int]] = {}
    for source, model, count in conn.execute(live.statements.stats_embeddings, p).fetchall():
        vectors.setdefault(source, {})[model] = count
    return documents, chunks, embedded, vectors


@dataclass(frozen=True)
class LiveCounts:
    """What the live counts of user folders need: the composed statements and the caller's identity."""

    statements: Statements
    principal: Mapping[str, Any]


def collect_stats(
    conn: psycopg.Connection,
    q: Queries,
    names: list[str],
    model_id: str,
    requests: dict[str, Any],
    public: frozenset[str] = frozenset(),
    live_counts: LiveCounts | None = None,
) -> dict[str, Any]:
    """Counts, versions and freshness for the given (visible) sources, plus request metrics;
    `public`: the online sources, whose counts the pipeline keeps; the others are counted live, of
    the documents the caller may see (`live_counts`). A model's `embeddings` add up its vectors of these
    sources (each source's distinct vectors), never the store's total."""
    p = {"names": names}
    documents, chunks, embedded, vectors = _counted(conn, q, [n for n in names if n in public], model_id)
    live = [n for n in names if n not in public]
    if live and live_counts is not None:
        live_documents, live_chunks, live_embedded, live_vectors = _live(conn, live_counts, live, model_id)
        documents.update(live_documents)
        chunks.update(live_chunks)
        embedded.update(live_embedded)
        vectors.update(live_vectors)
    versions: dict[str, dict[str, int]] = {}
    for source, status, count, _ in conn.execute(q.stats_versions, p).fetchall():
        versions.setdefault(source, {})[status] = count
    fresh = {r[0]: r for r in conn.execute(q.stats_freshness, p).fetchall()}
    per_source = {
        name: {
            "documents": documents.get(name, 0),
            "chunks": chunks.get(name, 0),
            "chunks_embedded": embedded.get(name, 0),
            "embeddings": vectors.get(name, {}),
            "versions": versions.get(name, {}),
            "current_version": fresh[name][1] if name in fresh else None,
            "last_sync": fresh[name][2] if name in fresh else None,
            "sync_age_s": fresh[name][4] if name in fresh else None,
        }
        for name in names
    }
    models = [
        {"model_id": m, "dimensions": d, "active": a, "embeddings": sum(v.get(m, 0) for v in vectors.values())}
        for m, d, a, _store_wide in conn.execute(q.stats_models).fetchall()
    ]
    totals = {
        "sources": len(names),
        "documents": sum(documents.values()),
        "chunks": sum(chunks.values()),
        "chunks_embedded": sum(embedded.values()),
    }
    return {
        "totals": totals,
        "sources": per_source,
        "models": models,
        "requests": requests,
    }


@dataclass(frozen=True)
class StoreSizes:
    """Store-wide figures over every tenant's rows: bytes per table and per index, vectors per model."""

    table_bytes: dict[str, int]
    index_bytes: dict[str, int]
    vectors: dict[str, int]


def store_sizes(conn: psycopg.Connection, q: Queries) -> StoreSizes:
    """The store's sizes and vector totals (for /metrics with SECRAG_METRICS_KEY, never for a caller)."""
    tables = {"tables": TABLES}
    return StoreSizes(
        table_bytes=dict(conn.execute(q.stats_table_sizes, tables).fetchall()),
        index_bytes={name: size for name, _table, size in conn.execute(q.stats_index_sizes, tables)},
        vectors={model: count for model, _d, _a, count in conn.execute(q.stats_models)},
    )
