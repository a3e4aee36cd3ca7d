"""Online sources' vectors held in the API's memory, for the legs that take exact distances over named
sources: the vector leg filtered to a few small sources, and the procedures voter leg (the ATT&CK procedure
examples). A matrix product over the 16,017 procedure examples and its top k take 1.8 ms on one core, where
PostgreSQL's exact scan of the same rows took 13 ms under EXPLAIN ANALYZE.

Only public rows of online sources are held (no tenant, so every caller may see them; the statement that
reads the chosen chunks still applies the filters and the access check). A source is held at one version:
its row of source_counts, which every publish and every embedding pass of that source rewrites. A search
uses the held vectors only when that version is the one the catalog last read (at most a second old);
otherwise it takes its distances in PostgreSQL as before, while one background thread loads the source
again. A source whose vectors would not fit the memory budget is never held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass

import numpy as np
from psycopg_pool import ConnectionPool
from threadpoolctl import ThreadpoolController

log = logging.getLogger(__name__)

# After a failed load (a timeout on a cold store, a connection lost), the source is not read again for this
# long: its searches take their distances in PostgreSQL meanwhile, and a store under strain is not read again
# by every search.
RETRY_AFTER_SECONDS = 60.0


@dataclass(frozen=True)
class Held:
    """One source's vectors at one version: unit rows, with their chunk and document ids."""

    version: str
    chunk_ids: list[str]
    doc_ids: list[str]
    matrix: np.ndarray  # float32, one unit row per chunk
    complete: bool = True  # every chunk of the source has its vector of the model
    labels: tuple[tuple[str, ...], ...] = ()  # each chunk's document's techniques

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes)


@dataclass(frozen=True)
class Nearest:
    """The k nearest chunks of the named sources, best first (ties by chunk id, as the SQL orders them)."""

    chunk_ids: list[str]
    doc_ids: list[str]
    sims: list[float]  # cosine similarity, 1 - pgvector's cosine distance


# Reads one source's public vectors of one model (model, source, max_rows, dimensions): at most max_rows + 1
# rows (one more than max_rows tells the source is too large to hold), or None when it has no counts yet.
Loader = Callable[[str, str, int, int], "Held | None"]


class SourceVectors:
    """Holds sources' vectors up to `max_bytes` (least recently used go first) and takes exact nearest chunks."""

    def __init__(self, load: Loader, *, max_bytes: int) -> None:
        self._load = load
        self._max_bytes = max_bytes
        self._held: OrderedDict[tuple[str, str], Held] = OrderedDict()
        self._too_large: dict[tuple[str, str], str] = {}  # the version found too large to hold
        self._loading: set[tuple[str, str]] = set()
        self._failed: dict[tuple[str, str], float] = {}  # when a load last failed (time.monotonic)
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        # One BLAS thread per product: OpenBLAS's own threads spin after each call and take the cores the
        # database and the other requests need (4 clients, filters as labelled: 63 req/s
        # with two threads, 79 with one; a product over the 16,017 procedure examples takes 1.3 ms on one).
        self._blas = ThreadpoolController()

    @property
    def enabled(self) -> bool:
        return self._max_bytes > 0

    def one_blas_thread(self) -> AbstractContextManager[object]:
        """One BLAS thread for products over the held vectors (see __init__), for callers outside this module."""
        limiter: AbstractContextManager[object] = self._blas.limit(limits=1, user_api="blas")
        return limiter

    def nearest(
        self,
        model_id: str,
        sources: Sequence[str],
        versions: Mapping[str, str],
        qvec: np.ndarray,
        k: int,
        *,
        complete: bool = False,
    ) -> Nearest | None:
        """The k nearest chunks of `sources` by exact cosine similarity, or None when one of them is not held
        at its current version (`versions`, source to version): the caller then takes them in PostgreSQL, and
        the missing sources are loaded in the background for the next search. With `complete`, also None
        while some chunk of a source lacks its vector of the model (a model embedding only some sources, the
        sentence model, serves them only once they are whole)."""
        if k <= 0:
            return None
        held = self._current(model_id, sources, versions, len(qvec))
        if held is None or (complete and not all(h.complete for h in held)):
            return None
        with self._blas.limit(limits=1, user_api="blas"):
            return _nearest(held, np.asarray(qvec, dtype=np.float32), k)

    def held(
        self, model_id: str, sources: Sequence[str], versions: Mapping[str, str], dimensions: int
    ) -> list[Held] | None:
        """The sources' vectors of the model, each whole and at its current version (`versions`), or None (the
        missing ones are loaded in the background, as for nearest())."""
        held = self._current(model_id, sources, versions, dimensions)
        return held if held is not None and all(h.complete for h in held) else None

    def _current(
        self, model_id: str, sources: Sequence[str], versions: Mapping[str, str], dimensions: int
    ) -> list[Held] | None:
        """Every source's vectors held at its current version, or None: the missing ones start loading in the
        background; a source too large to hold, or without counts yet, is None too."""
        if not self.enabled or not sources:
            return None
        found: list[Held] = []
        missing: list[str] = []
        with self._lock:
            for source in sources:
                key = (model_id, source)
                entry = self._held.get(key)
                current = versions.get(source)
                if entry is not None and current is not None and entry.version == current:
                    self._held.move_to_end(key)
                    found.append(entry)
                elif current is not None and self._too_large.get(key) != current:
                    missing.append(source)
        if missing:
            self._start_loads(model_id, missing, dimensions)
            return None
        return found if len(found) == len(sources) else None

    def load(self, model_id: str, source: str, dimensions: int) -> bool:
        """Load one source now (start-up, tests); whether it is held."""
        key = (model_id, source)
        max_rows = self._max_bytes // (4 * max(1, dimensions))
        held = self._load(model_id, source, max_rows, dimensions)
        with self._lock:
            self._loading.discard(key)
            if held is None:
                self._held.pop(key, None)
                return False
            if len(held.chunk_ids) > max_rows:
                self._too_large[key] = held.version
                self._held.pop(key, None)
                log.info("source too large to hold in memory", extra={"source": source, "model": model_id})
                return False
            self._too_large.pop(key, None)
            self._failed.pop(key, None)
            self._held[key] = held
            self._held.move_to_end(key)
            while self._bytes() > self._max_bytes:
                self._held.popitem(last=False)
        log.info(
            "source vectors held in memory",
            extra={"source": source, "model": model_id, "chunks": len(held.chunk_ids), "version": held.version},
        )
        return True

    def info(self) -> dict[str, int]:
        """What /metrics shows: bytes held, sources held (per model), the budget, and loads failing now."""
        with self._lock:
            return {
                "bytes": self._bytes(),
                "sources": len(self._held),
                "max_bytes": self._max_bytes,
                "failed_loads": len(self._failed),
            }

    def _bytes(self) -> int:  # under the lock
        return sum(h.nbytes for h in self._held.values())

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    def _start_loads(self, model_id: str, sources: list[str], dimensions: int) -> None:
        now = time.monotonic()
        with self._lock:
            wanted = [
                s
                for s in sources
                if (model_id, s) not in self._loading
                and now - self._failed.get((model_id, s), -RETRY_AFTER_SECONDS) >= RETRY_AFTER_SECONDS
            ]
            if not wanted:
                return
            self._loading.update((model_id, s) for s in wanted)
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="secrag-vectors")
            executor = self._executor
        for source in wanted:
            executor.submit(self._load_quietly, model_id, source, dimensions)

    def _load_quietly(self, model_id: str, source: str, dimensions: int) -> None:
        try:
            self.load(model_id, source, dimensions)
        except Exception as exc:  # noqa: BLE001 - the searches go on taking distances in PostgreSQL
            log.warning(
                "could not hold a source's vectors in memory; its searches read PostgreSQL, retried in %.0f s",
                RETRY_AFTER_SECONDS,
                extra={"source": source, "error": f"{type(exc).__name__}: {exc}".strip()},
            )
            with self._lock:
                self._loading.discard((model_id, source))
                self._failed[(model_id, source)] = time.monotonic()


def _nearest(held: list[Held], qvec: np.ndarray, k: int) -> Nearest:
    """The k best rows over every held source: each source's k best, then merged (no copy of the matrices)."""
    norm = float(np.linalg.norm(qvec))
    query = qvec / norm if norm > 0 else qvec
    picked: list[tuple[float, str, str]] = []
    for entry in held:
        sims = entry.matrix @ query
        if len(sims) > k:
            top = np.argpartition(-sims, k - 1)[:k]
        else:
            top = np.arange(len(sims))
        picked.extend((float(sims[i]), entry.chunk_ids[i], entry.doc_ids[i]) for i in top)
    picked.sort(key=lambda p: (-p[0], p[1]))
    best = picked[:k]
    return Nearest(chunk_ids=[p[1] for p in best], doc_ids=[p[2] for p in best], sims=[p[0] for p in best])


def reader(pool: ConnectionPool, statement: str, timeout_ms: int) -> Loader:
    """The loader reading sources' vectors on the reader pool (sql/queries/serving.sql: source_vectors), in one
    statement, so the version and the rows are of one snapshot; with the store-wide reads' timeout, not a
    request's (sigma's rows of a cold store of 200,000 chunks took longer than a request's 2 s)."""

    def load(model_id: str, source: str, max_rows: int, dimensions: int) -> Held | None:
        params = {"model": model_id, "source": source, "max_rows": max_rows + 1}
        with pool.connection() as conn, conn.transaction(), conn.cursor(binary=True) as cur:
            cur.execute("SELECT set_config('statement_timeout', %s, true)", [str(timeout_ms)])
            rows = cur.execute(statement, params).fetchall()
        if not rows:  # no counts yet: not published
            return None
        chunks = [r for r in rows if r[1] is not None]
        version = str(rows[0][0])
        return Held(
            version=version,
            chunk_ids=[r[1] for r in chunks],
            doc_ids=[r[2] for r in chunks],
            matrix=unit_rows([r[3] for r in chunks], dimensions),
            complete=len(chunks) >= int(version.rsplit("/", 1)[1]),
            labels=tuple(tuple(r[4] or ()) for r in chunks),
        )

    return load


def unit_rows(raw: Sequence[bytes], dimensions: int) -> np.ndarray:
    """pgvector's binary form (vector_send: two int16 headers, then big-endian float4s) as unit float32 rows."""
    # the 4 header bytes of each row take the place of one float: read every row at once, drop that column
    rows = np.frombuffer(b"".join(raw), dtype=">f4").reshape(len(raw), dimensions + 1)
    matrix = rows[:, 1:].astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    matrix /= norms
    return matrix
