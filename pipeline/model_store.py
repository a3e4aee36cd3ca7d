"""Embedding models in the store: each model's own HNSW index, what is kept, and pruning the vectors of
models no longer configured."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from secrag.db.queries import Queries, one_row

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredModel:
    model_id: str
    dimensions: int
    active: bool
    vectors: int


def _slug(text: str, size: int) -> str:
    """`text` as a part of an identifier: lower case, runs of other characters as one `_`, at most `size`."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:size]


def model_index_name(model_id: str) -> str:
    """embeddings_<model id as an identifier>_hnsw_idx (within PostgreSQL's 63 bytes)."""
    return f"embeddings_{_slug(model_id, 40)}_hnsw_idx"


def ensure_model_index(conn: psycopg.Connection, model_id: str, dimensions: int, q: Queries) -> bool:
    """Give the model its own partial HNSW index (cosine, on the vector cast to its dimensions), as the
    first model's migration did; True when it was created now. Made before the model has vectors, so
    the build only scans the table once and later inserts keep it current."""
    with conn.transaction():
        conn.execute(q.lock_model_indexes)
        if one_row(conn.execute(q.model_index_exists, {"model": model_id}))[0]:
            return False
        started = time.monotonic()
        conn.execute(
            sql.SQL(
                "CREATE INDEX {name} ON embeddings USING hnsw ((vector::vector({dims})) vector_cosine_ops) "
                "WHERE model_id = {model}"
            ).format(
                name=sql.Identifier(model_index_name(model_id)),
                dims=sql.Literal(dimensions),
                model=sql.Literal(model_id),
            )
        )
    log.info("created the HNSW index of embedding model %s in %.1fs", model_id, time.monotonic() - started)
    return True


def stored_models(conn: psycopg.Connection, sql_dir: Path) -> list[StoredModel]:
    q = Queries(sql_dir, "store")
    return [StoredModel(m, int(d), bool(a), int(n)) for m, d, a, n in conn.execute(q.model_inventory).fetchall()]


def prunable(models: list[StoredModel], keep: Collection[str]) -> list[StoredModel]:
    """The models whose vectors may go: neither active nor in `keep` (the configured ones)."""
    return [m for m in models if not m.active and m.model_id not in keep]


def prune_model(conn: psycopg.Connection, sql_dir: Path, model_id: str) -> int:
    """Remove a model that is not active: its vectors, its HNSW index and its row, in one transaction.
    Returns the vectors removed; refuses the active model."""
    q = Queries(sql_dir, "store")
    with conn.transaction():
        conn.execute(q.lock_model_indexes)
        removed = conn.execute(q.delete_model_vectors, {"model": model_id}).rowcount
        if conn.execute(q.delete_model, {"model": model_id}).rowcount != 1:
            raise ValueError(f"embedding model {model_id} is active or unknown; it cannot be pruned")
        for (index,) in conn.execute(q.model_indexes, {"model": model_id}).fetchall():
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
    log.info("pruned embedding model %s: %d vectors", model_id, removed)
    return int(removed)


def source_index_name(model_id: str, source: str) -> str:
    """chunk_vectors_<model>_<source>_hnsw (each part cut so the name stays within PostgreSQL's 63 bytes)."""
    return f"chunk_vectors_{_slug(model_id, 20)}_{_slug(source, 20)}_hnsw"


def source_chunks(conn: psycopg.Connection, sql_dir: Path) -> dict[str, int]:
    """Each source's chunks, as the last publish counted them."""
    return {s: int(n) for s, n in conn.execute(Queries(sql_dir, "store").source_chunks).fetchall()}


def create_source_index(
    conn: psycopg.Connection, sql_dir: Path, model_id: str, dimensions: int, source: str, memory: str = "1GB"
) -> bool:
    """Give one source its own HNSW index over its chunk vectors of this model (a partial index on
    chunk_vectors whose predicate names both), built without blocking writes (CREATE INDEX CONCURRENTLY:
    `conn` in autocommit) with `memory` of maintenance_work_mem. A search filtered to that source then
    walks its graph alone instead of the whole store's (serving/search/catalog.py vector_indexed_sources);
    a publish keeps it current. True when it was created now."""
    q = Queries(sql_dir, "store")
    name = source_index_name(model_id, source)
    if one_row(conn.execute(q.index_exists, {"name": name}))[0]:
        return False
    conn.execute(q.maintenance_memory, {"memory": memory})
    started = time.monotonic()
    conn.execute(
        sql.SQL(
            "CREATE INDEX CONCURRENTLY {name} ON chunk_vectors USING hnsw ((vector::vector({dims})) vector_cosine_ops) "
            "WHERE model_id = {model} AND source = {source}"
        ).format(
            name=sql.Identifier(name),
            dims=sql.Literal(dimensions),
            model=sql.Literal(model_id),
            source=sql.Literal(source),
        )
    )
    log.info("created the HNSW index of source %s (model %s) in %.1fs", source, model_id, time.monotonic() - started)
    return True


def drop_source_index(conn: psycopg.Connection, sql_dir: Path, model_id: str, source: str) -> bool:
    """Drop a source's own HNSW index (its searches walk the whole store's again); True when there was one."""
    name = source_index_name(model_id, source)
    existed = bool(one_row(conn.execute(Queries(sql_dir, "store").index_exists, {"name": name}))[0])
    conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
    return existed
