"""The query encoder: the active embedding model, loaded once per process, with a query cache and micro-batching."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from cachetools import LRUCache

from secrag.errors import ConfigError
from secrag.models.embedder import Embedder, TextModel
from secrag.models.registry import model_info

CACHE_SIZE = 1024
MAX_BATCH = 16
BACKENDS = ("onnx", "torch")


class _Pending:
    """One query waiting for a model run."""

    __slots__ = ("text", "vector", "error", "done")

    def __init__(self, text: str) -> None:
        self.text = text
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = False


class QueryEncoder:
    """Encodes queries; concurrent callers share model runs (leader/follower micro-batching).

    A caller that finds the model idle runs it at once on everything queued (up to `max_batch` texts, or
    all of its own when it brought more: `encode_many`);
    callers arriving meanwhile queue up and wait for the next run, which one of them leads. No extra threads.
    """

    def __init__(
        self, model: TextModel, *, cache_size: int = CACHE_SIZE, max_batch: int = MAX_BATCH, torch_threads: int = 0
    ) -> None:
        self.model = model
        self.cache_size = max(0, cache_size)
        self.max_batch = max(1, max_batch)
        self.torch_threads = torch_threads
        self.loaded = False
        self._cond = threading.Condition()
        self._cache: LRUCache[str, np.ndarray] | None = LRUCache(self.cache_size) if self.cache_size else None
        self._queue: list[_Pending] = []
        self._running = False
        self._hits = self._misses = self._runs = self._encoded = 0
        self._encode_ms = 0.0

    @property
    def model_id(self) -> str:
        return self.model.model_id

    @property
    def dimensions(self) -> int:
        return self.model.dimensions

    @property
    def backend(self) -> str:
        return "torch" if isinstance(self.model, Embedder) else "onnx"

    @property
    def embedder(self) -> TextModel:
        """A model to embed documents with, as the pipeline does (e.g. in tests): the torch Embedder of an
        fp32 model, the same ONNX model for an int8 one."""
        if isinstance(self.model, Embedder) or model_info(self.model_id).quantized_from:
            return self.model
        return torch_embedder(self.model_id, self.torch_threads)

    def load(self) -> None:
        self.model.load()
        self.loaded = True

    def cache_info(self) -> dict[str, Any]:
        """Cache hits/misses/size and model runs, texts encoded and milliseconds spent in the model."""
        with self._cond:
            return {
                "backend": self.backend,
                "hits": self._hits,
                "misses": self._misses,
                "size": len(self._cache) if self._cache is not None else 0,
                "max_size": self.cache_size,
                "runs": self._runs,
                "encoded": self._encoded,
                "encode_ms": round(self._encode_ms, 3),
            }

    def clear_cache(self) -> None:
        """Drop cached vectors and reset the counters."""
        with self._cond:
            if self._cache is not None:
                self._cache.clear()
            self._hits = self._misses = self._runs = self._encoded = 0
            self._encode_ms = 0.0

    def encode(self, text: str) -> np.ndarray:
        """The float32 vector of one query, its model's query prefix first (read-only; shared with the cache)."""
        return self.encode_many([text])[0]

    def encode_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The vectors of several queries, in order: the cached ones at once, the others in one model run
        (or more when other callers' queries were queued first), which this caller leads or waits for."""
        found: dict[str, np.ndarray] = {}
        pending: list[_Pending] = []
        with self._cond:
            for text in dict.fromkeys(texts):
                hit = self._cache.get(text) if self._cache is not None else None
                if hit is not None:
                    self._hits += 1
                    found[text] = hit
                    continue
                self._misses += 1
                item = _Pending(text)
                pending.append(item)
                self._queue.append(item)
        run_size = max(self.max_batch, len(pending))
        while pending:
            with self._cond:
                while self._running and not all(p.done for p in pending):
                    self._cond.wait()
                if all(p.done for p in pending):
                    break
                self._running = True  # lead the next run: the oldest queued queries (ours among them, or later)
                batch = self._queue[:run_size]
                del self._queue[:run_size]
            self._run(batch)
        for item in pending:
            if item.error is not None:
                raise item.error
            assert item.vector is not None
            found[item.text] = item.vector
        return [found[text] for text in texts]

    def _run(self, batch: list[_Pending]) -> None:
        texts = list(dict.fromkeys(p.text for p in batch))
        vectors: np.ndarray | None = None
        error: BaseException | None = None
        started = time.perf_counter()
        try:
            vectors = np.asarray(self.model.encode_queries(texts), dtype=np.float32)
            if vectors.shape != (len(texts), self.dimensions):
                raise RuntimeError(f"model returned shape {vectors.shape} for {len(texts)} texts")
        except BaseException as exc:  # every waiting caller gets it, then the leader re-raises it too
            error = exc
        elapsed_ms = (time.perf_counter() - started) * 1000
        with self._cond:
            self._runs += 1
            self._encoded += len(texts)
            self._encode_ms += elapsed_ms
            by_text: dict[str, np.ndarray] = {}
            try:
                if vectors is not None and error is None:
                    for text, row in zip(texts, vectors, strict=True):
                        vector = row.copy()
                        vector.setflags(write=False)
                        by_text[text] = vector
                        if self._cache is not None:
                            self._cache[text] = vector
            except BaseException as exc:
                error = exc
            finally:  # whatever happened, release the waiters and the model
                for pending in batch:
                    pending.vector = by_text.get(pending.text) if error is None else None
                    pending.error = error
                    pending.done = True
                self._running = False
                self._cond.notify_all()


def make_model(
    model_id: str, backend: str = "onnx", *, threads: int = 1, torch_threads: int = 0, cache_dir: Path | None = None
) -> TextModel:
    """The query model for a backend: "onnx" (onnxruntime, `threads` threads) or "torch" (sentence-transformers)."""
    if cache_dir is None:
        from secrag.settings import get_settings

        cache_dir = get_settings().models_dir
    if backend == "torch":
        return Embedder(model_id, batch_size=MAX_BATCH, threads=torch_threads, models_dir=cache_dir)
    if backend != "onnx":
        raise ConfigError(f"unknown query encoder {backend!r}", hint=f"choose one of: {', '.join(BACKENDS)}")
    from secrag.models.onnx_model import OnnxEncoder

    return OnnxEncoder(model_id, cache_dir, threads=threads)


@lru_cache(maxsize=4)
def torch_embedder(model_id: str, threads: int = 0) -> Embedder:
    """One torch Embedder per model and process (loaded lazily on first encode)."""
    return Embedder(model_id, threads=threads)


@lru_cache(maxsize=4)
def shared_encoder(
    model_id: str,
    threads: int = 0,
    *,
    backend: str = "onnx",
    encoder_threads: int = 1,
    cache_size: int = CACHE_SIZE,
    cache_dir: Path | None = None,
) -> QueryEncoder:
    """One loaded encoder per model and options, per process (apps created in the same process share it).

    `threads` is torch's thread count (torch backend, `.embedder`); `encoder_threads` onnxruntime's.
    `cache_dir` holds the ONNX export (default: <data_dir>/models).
    """
    model = make_model(model_id, backend, threads=encoder_threads, torch_threads=threads, cache_dir=cache_dir)
    encoder = QueryEncoder(model, cache_size=cache_size, torch_threads=threads)
    encoder.load()
    return encoder
