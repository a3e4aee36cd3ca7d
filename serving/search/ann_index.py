"""An HNSW index in the API's memory (usearch) over every source's public vectors (the rows without a tenant),
for the vector walk that nothing narrows: the unfiltered vector leg and the neighbours leg it shares its walk
with, for a caller without a tenant (a tenant's caller may see rows the index does not hold: PostgreSQL walks).
It replaces PostgreSQL's HNSW walk, the largest part of an unfiltered search's statement.

It serves only while every source is at the version the index was built at (their rows of source_counts, as
for serving/search/source_vectors.py): a source changed since walks in PostgreSQL while one background thread
builds the index again. The statement that reads the chosen chunks applies the filters and the access check as
everywhere. An index that would not fit the memory budget is never held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from usearch.index import Index

from serving.search.source_vectors import Held, Nearest

log = logging.getLogger(__name__)

# The graph's links per node and the candidates a build keeps, as pgvector's defaults (m 16, ef_construction
# 64) would be too few for float16 rows. A walk keeps the candidates PostgreSQL's walk would (hnsw.ef_search,
# search.yaml's ef_search; k when more): the answers it gives are in docs/figures.md (bench/quality.py with it on).
CONNECTIVITY = 16
EXPANSION_ADD = 128
# Vectors are held as float16 (two bytes a dimension); the graph's links take about this much more per chunk
# (usearch's memory_usage at 384 dimensions: 1,300 bytes a chunk at 300,000 chunks), the ids about ID_BYTES.
LINK_BYTES_PER_CHUNK = 530
ID_BYTES_PER_CHUNK = 160
RETRY_AFTER_SECONDS = 60.0

# Reads one source's public vectors of one model (serving/search/source_vectors.py: Loader).
Loader = Callable[[str, str, int, int], "Held | None"]


@dataclass(frozen=True)
class Built:
    """The index of one model over the online sources at their versions."""

    model_id: str
    versions: Mapping[str, str]
    index: Index
    chunk_ids: list[str]
    doc_ids: list[str]
    sources: list[str]
    nbytes: int


@dataclass(frozen=True)
class Walked(Nearest):
    """The nearest chunks with their sources (the neighbours leg leaves out the sources that never vote)."""

    sources: list[str]


def bytes_per_chunk(dimensions: int) -> int:
    """The memory one chunk takes in the index (the budget's unit)."""
    return 2 * dimensions + LINK_BYTES_PER_CHUNK + ID_BYTES_PER_CHUNK


class AnnIndex:
    """Builds and holds one model's index up to `max_bytes` and walks it."""

    def __init__(self, load: Loader, *, max_bytes: int) -> None:
        self._load = load
        self._max_bytes = max_bytes
        self._built: Built | None = None
        self._too_large: tuple[str, dict[str, str]] | None = None  # the model and versions found too large
        self._building = False
        self._failed_at = -RETRY_AFTER_SECONDS
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    @property
    def enabled(self) -> bool:
        return self._max_bytes > 0

    def nearest(
        self,
        model_id: str,
        versions: Mapping[str, str],
        qvec: np.ndarray,
        k: int,
        dimensions: int,
        *,
        ef: int = 0,
    ) -> Walked | None:
        """The k nearest public chunks of the whole store, best first (ties by chunk id), keeping `ef` candidates
        (k when more) as the walk goes, or None: the index is off, or not built at `versions` (every source's)
        yet: then it is built in the background for the next search."""
        if not self.enabled or k <= 0 or not versions:
            return None
        wanted = dict(versions)
        with self._lock:
            built = self._built
        if built is None or built.model_id != model_id or dict(built.versions) != wanted:
            self._start_build(model_id, wanted, dimensions)
            return None
        return walk(built, qvec, k, ef)

    def build(self, model_id: str, versions: Mapping[str, str], dimensions: int) -> bool:
        """Build the index of the sources of `versions` now (start-up, tests); whether it is held."""
        try:
            built = self._read(model_id, versions, dimensions)
        finally:
            with self._lock:
                self._building = False
        with self._lock:
            if built is None:
                self._too_large = (model_id, dict(versions))
                self._built = None
                return False
            self._built = built
        log.info(
            "vector index held in memory",
            extra={"model": model_id, "chunks": len(built.chunk_ids), "bytes": built.nbytes},
        )
        return True

    def _read(self, model_id: str, versions: Mapping[str, str], dimensions: int) -> Built | None:
        max_rows = self._max_bytes // bytes_per_chunk(dimensions)
        held: dict[str, Held] = {}
        for source in sorted(versions):
            found = self._load(model_id, source, max_rows, dimensions)
            if found is None:
                continue
            held[source] = found
            max_rows -= len(found.chunk_ids)
            if max_rows < 0:
                log.info("vector index too large to hold in memory", extra={"model": model_id})
                return None
        matrix = np.concatenate([h.matrix for h in held.values()]) if held else np.zeros((0, dimensions), np.float32)
        index = Index(
            ndim=dimensions,
            metric="cos",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        if len(matrix):
            index.add(np.arange(len(matrix), dtype=np.uint64), matrix, threads=1)
        nbytes = int(index.memory_usage) + ID_BYTES_PER_CHUNK * len(matrix)
        if nbytes > self._max_bytes:
            log.info("vector index too large to hold in memory", extra={"model": model_id, "bytes": nbytes})
            return None
        return Built(
            model_id=model_id,
            versions={s: h.version for s, h in held.items()} | {s: v for s, v in versions.items() if s not in held},
            index=index,
            chunk_ids=[c for h in held.values() for c in h.chunk_ids],
            doc_ids=[d for h in held.values() for d in h.doc_ids],
            sources=[s for s, h in held.items() for _ in h.chunk_ids],
            nbytes=nbytes,
        )

    def info(self) -> dict[str, int]:
        """What /metrics shows: bytes and chunks held, the budget."""
        with self._lock:
            built = self._built
        return {
            "bytes": built.nbytes if built else 0,
            "chunks": len(built.chunk_ids) if built else 0,
            "max_bytes": self._max_bytes,
        }

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    def _start_build(self, model_id: str, versions: dict[str, str], dimensions: int) -> None:
        with self._lock:
            if (
                self._building
                or self._too_large == (model_id, versions)
                or time.monotonic() - self._failed_at < RETRY_AFTER_SECONDS
            ):
                return
            self._building = True
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="secrag-ann")
            executor = self._executor
        executor.submit(self._build_quietly, model_id, versions, dimensions)

    def _build_quietly(self, model_id: str, versions: dict[str, str], dimensions: int) -> None:
        try:
            self.build(model_id, versions, dimensions)
        except Exception as exc:  # noqa: BLE001 - the searches go on walking in PostgreSQL
            log.warning(
                "could not build the vector index in memory; searches walk in PostgreSQL, retried in %.0f s",
                RETRY_AFTER_SECONDS,
                extra={"model": model_id, "error": f"{type(exc).__name__}: {exc}".strip()},
            )
            with self._lock:
                self._failed_at = time.monotonic()


def walk(built: Built, qvec: np.ndarray, k: int, ef: int = 0) -> Walked:
    """The index's k nearest to `qvec` keeping max(ef, k) candidates (usearch keeps k when more), best first,
    ties by chunk id (as the SQL orders them)."""
    if ef and built.index.expansion_search != ef:  # the store's ef changes with its size: seldom
        built.index.expansion_search = ef  # type: ignore[misc]  # settable, stubs say no
    found = built.index.search(np.asarray(qvec, dtype=np.float32), k, threads=1)
    picked = sorted(
        ((1.0 - float(d), built.chunk_ids[int(i)], int(i)) for i, d in zip(found.keys, found.distances, strict=True)),
        key=lambda p: (-p[0], p[1]),
    )
    return Walked(
        chunk_ids=[p[1] for p in picked],
        doc_ids=[built.doc_ids[p[2]] for p in picked],
        sims=[p[0] for p in picked],
        sources=[built.sources[p[2]] for p in picked],
    )
