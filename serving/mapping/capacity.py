"""What one API process lets its maps take: reader connections for their sentence searches (the pool less a
reserve that other callers keep, shared by every map at once), how many searches one map runs at once, and how
long a map may run."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from serving.settings import ServingSettings


@dataclass
class MapCapacity:
    connections: int  # sentence searches at once over every map of the process
    width: int  # sentence searches one map runs at once, at most
    timeout: float  # seconds a map may run
    _free: threading.BoundedSemaphore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._free = threading.BoundedSemaphore(self.connections)

    @classmethod
    def from_settings(cls, settings: ServingSettings) -> MapCapacity:
        """SECRAG_POOL_MAX_SIZE less SECRAG_MAP_RESERVE_CONNECTIONS (one at least) for all maps together,
        SECRAG_MAP_CONCURRENCY (within those) for one, SECRAG_MAP_TIMEOUT_SECONDS for its whole run."""
        connections = max(1, settings.pool_max_size - settings.map_reserve_connections)
        return cls(connections, min(settings.map_concurrency, connections), settings.map_timeout_seconds)

    @contextmanager
    def connection(self, deadline: float) -> Iterator[bool]:
        """One of the maps' connections, waited for until the deadline (time.monotonic()); yields whether it
        was had (False: the map ran out of time waiting for other maps' searches)."""
        had = self._free.acquire(timeout=max(0.0, deadline - time.monotonic()))
        try:
            yield had
        finally:
            if had:
                self._free.release()
