"""Embed the chunks that have no vector for the active model yet; write vectors with binary COPY.

A pass reads the pending chunk texts, orders them by length (a batch of similar lengths pads little), and
encodes batch after batch while one writer thread COPYs the previous batch's vectors and commits them: the
database's work (the COPY, the HNSW index's maintenance, the commit) runs beside the encoder instead of
between its batches. Each phase's seconds are in EmbedStats.phases (`bench/build.py` prints them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from secrag.db.queries import Queries, one_row
from secrag.models.embedder import TextModel

from .indexing import embedding_input
from .model_store import ensure_model_index
from .store.counts import refresh_all_counts, refresh_counts

log = logging.getLogger(__name__)


PHASES = ("prepare", "read", "encode", "write", "wait", "finish")


@dataclass(frozen=True)
class EmbedStats:
    """Counts and speed of one embedding pass."""

    chunks: int
    embedded: int
    reused: int
    seconds: float
    # Seconds per phase: `prepare` (the model's row and HNSW index), `read` (the pending texts), `encode` (the
    # model, tokenising included), `write` (the writer thread's COPY and commits, beside the encoder), `wait`
    # (the encoder waiting for the writer), `finish` (the source's counts and, when vectors were written, the
    # planner's statistics). All but `write` add up to `seconds`.
    phases: dict[str, float] = field(default_factory=dict)

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
    phases = dict.fromkeys(PHASES, 0.0)
    params = {"source": source, "model": embedder.model_id}
    with conn.transaction():
        conn.execute(q.ensure_model, {"model": embedder.model_id, "dimensions": embedder.dimensions})
    ensure_model_index(conn, embedder.model_id, embedder.dimensions, q)
    phases["prepare"] = time.monotonic() - started
    mark = time.monotonic()
    total = int(one_row(conn.execute(q.count_chunks, params))[0])
    todo = conn.execute(q.chunks_without_vectors, params).fetchall()
    todo.sort(key=_text_length)
    phases["read"] = time.monotonic() - mark

    def write(batch: Sequence[Any], vectors: Any) -> float:
        began = time.monotonic()
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(q.copy_embeddings) as copy:
                copy.set_types(["text", "text", "vector"])
                for (content_hash, _, _), vector in zip(batch, vectors, strict=True):
                    copy.write_row([content_hash, embedder.model_id, vector])
        return time.monotonic() - began

    done = 0
    writing: tuple[Future[float], int] | None = None

    def written() -> None:  # waits for the batch being written, then counts it
        nonlocal done
        if writing is None:
            return
        mark = time.monotonic()
        phases["write"] += writing[0].result()
        phases["wait"] += time.monotonic() - mark
        done += writing[1]
        if progress is not None:
            progress(done, len(todo))

    # The connection is the writer's alone until the last batch is written (the encoder does not use it).
    with ThreadPoolExecutor(1, thread_name_prefix="secrag-vectors") as writer:
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            mark = time.monotonic()
            vectors = embedder.encode_documents([embedding_input(title, text) for _, title, text in batch])
            phases["encode"] += time.monotonic() - mark
            written()
            writing = (writer.submit(write, batch, vectors), len(batch))
        written()
    mark = time.monotonic()
    if source is None:
        refresh_all_counts(q, conn)
    else:
        with conn.transaction():
            refresh_counts(q, conn, source)
    conn.execute(q.refresh_model_vectors, {"model": embedder.model_id})
    if done:
        conn.execute(q.analyze_embedded)
    phases["finish"] = time.monotonic() - mark
    stats = EmbedStats(
        chunks=total,
        embedded=done,
        reused=total - done,
        seconds=time.monotonic() - started,
        phases={k: round(v, 3) for k, v in phases.items()},
    )
    log.info(
        "embedded %s/%s chunks of %s with %s in %.1fs",
        done,
        total,
        source or "all sources",
        embedder.model_id,
        stats.seconds,
    )
    return stats


def _text_length(row: Sequence[Any]) -> tuple[int, str]:
    """A pending chunk's (title and text) length, then its hash: batches of similar lengths, in a fixed order."""
    content_hash, title, text = row
    return len(title or "") + len(text or ""), content_hash
