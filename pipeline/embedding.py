"""Embed the chunks that have no vector for the active model yet; write vectors with binary COPY."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from secrag.db.queries import Queries, one_row
from secrag.models.embedder import TextModel

from .indexing import embedding_input
from .model_store import ensure_model_index
from .store.counts import refresh_all_counts, refresh_counts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedStats:
    """Counts and speed of one embedding pass."""

    chunks: int
    embedded: int
    reused: int
    seconds: float

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


def embed_pending(
    conn: psycopg.Connection,
    embedder: TextModel,
    sql_dir: Path,
    *,
    source: str | None = None,
    batch_size: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> EmbedStats:
    """Embed every distinct chunk text of `source` (all when None) lacking a vector for the model.

    Each batch commits on its own, so an interrupted pass keeps its progress and a retry converges.
    """
    from pgvector.psycopg import register_vector

    register_vector(conn)
    q = Queries(sql_dir, "store")
    started = time.monotonic()
    params = {"source": source, "model": embedder.model_id}
    with conn.transaction():
        conn.execute(q.ensure_model, {"model": embedder.model_id, "dimensions": embedder.dimensions})
    ensure_model_index(conn, embedder.model_id, embedder.dimensions, q)
    total = int(one_row(conn.execute(q.count_chunks, params))[0])
    todo = conn.execute(q.chunks_without_vectors, params).fetchall()
    done = 0
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        vectors = embedder.encode_documents([embedding_input(title, text) for _, title, text in batch])
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(q.copy_embeddings) as copy:
                copy.set_types(["text", "text", "vector"])
                for (content_hash, _, _), vector in zip(batch, vectors, strict=True):
                    copy.write_row([content_hash, embedder.model_id, vector])
        done += len(batch)
        if progress is not None:
            progress(done, len(todo))
    if source is None:
        refresh_all_counts(q, conn)
    else:
        with conn.transaction():
            refresh_counts(q, conn, source)
    conn.execute(q.refresh_model_vectors, {"model": embedder.model_id})
    stats = EmbedStats(chunks=total, embedded=done, reused=total - done, seconds=time.monotonic() - started)
    log.info(
        "embedded %s/%s chunks of %s with %s in %.1fs",
        done,
        total,
        source or "all sources",
        embedder.model_id,
        stats.seconds,
    )
    return stats
