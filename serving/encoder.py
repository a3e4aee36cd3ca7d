"""The query encoder: the active embedding model, loaded once per process, with a small query cache."""
from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache

import numpy as np

from secrag.embedder import Embedder

CACHE_SIZE = 1024


class QueryEncoder:
    """Encodes one query at a time (torch on shared cores gains nothing from concurrency)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.loaded = False

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def dimensions(self) -> int:
        return self.embedder.dimensions

    def load(self) -> None:
        self.embedder.load()
        self.loaded = True

    def encode(self, text: str) -> np.ndarray:
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
            vector = self.embedder.encode([text])[0]
            self._cache[text] = vector
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
            return vector


@lru_cache(maxsize=4)
def shared_encoder(model_id: str, threads: int = 0) -> QueryEncoder:
    """One loaded encoder per model and process (apps created in the same process share it)."""
    encoder = QueryEncoder(Embedder(model_id, batch_size=1, threads=threads))
    encoder.load()
    return encoder
