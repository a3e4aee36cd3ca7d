"""Search responses kept per process, keyed by the caller, the request and the store's data version.

The data version (serving/search/catalog.py) changes with every publish and embedding pass, so a cached
response is at most `DATA_VERSION_TTL` seconds older than the store the API reads; the serving model is
part of the key too. A response is kept under the version read on the connection that computed it, before
its legs ran (serving/search/searcher.py), so an entry is never older than the data its key names, on a
primary or on a replica (whose replay lag comes on top). Bounded (least recently used out), and off with
SECRAG_RESULT_CACHE_SIZE=0 (benchmarks).
"""

from __future__ import annotations

import threading
from typing import Any

from cachetools import LRUCache

from serving.access.keys import Principal
from serving.contract.requests import SearchRequest
from serving.contract.responses import SearchResponse

Key = tuple[str, str, str, str, tuple[str, ...], str]


def cache_key(data_version: str, model_id: str, principal: Principal, req: SearchRequest) -> Key:
    return (
        data_version,
        model_id,
        principal.tenant or "",
        principal.user or "",
        tuple(sorted(principal.groups)),
        req.model_dump_json(by_alias=True),
    )


class ResultCache:
    """A lock around cachetools' LRUCache, with hit and miss counts (/v1/stats)."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._items: LRUCache[Key, SearchResponse] | None = LRUCache(max_size) if max_size else None
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def get(self, key: Key) -> SearchResponse | None:
        if self._items is None:
            return None
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self._misses += 1
            else:
                self._hits += 1
            return found

    def put(self, key: Key, response: SearchResponse) -> None:
        if self._items is None:
            return
        with self._lock:
            self._items[key] = response

    def info(self) -> dict[str, Any]:
        with self._lock:
            size = len(self._items) if self._items is not None else 0
            return {"hits": self._hits, "misses": self._misses, "size": size, "max_size": self.max_size}
