"""What one API process lets its maps take: turns of map work (a batch of sentences encoded, or one sentence
searched on a reader connection) shared by every map at once: half the cores always, and the rest of the pool
less a reserve that other callers keep while no other request is in flight; how many searches one map runs at
once; and how long a map may run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from serving.observability.in_flight import InFlight
from serving.search.side_legs import usable_cores
from serving.settings import ServingSettings


def _none_busy() -> int:
    return 0


@dataclass
class MapCapacity:
    at_once: int  # map work at once over every map of the process, whatever else runs
    spare: int  # more map work at once while no other API request is in flight
    width: int  # sentence searches one map runs at once, at most
    timeout: float  # seconds a map may run
    busy: Callable[[], int] = _none_busy  # the API's requests in flight (maps' own included)
    maps: InFlight = field(default_factory=InFlight)  # maps running
    _free: threading.BoundedSemaphore = field(init=False, repr=False)
    _spare: threading.BoundedSemaphore | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._free = threading.BoundedSemaphore(self.at_once)
        self._spare = threading.BoundedSemaphore(self.spare) if self.spare > 0 else None

    @classmethod
    def from_settings(
        cls, settings: ServingSettings, busy: Callable[[], int] = _none_busy, cores: int | None = None
    ) -> MapCapacity:
        """SECRAG_MAP_PROCESS_CONCURRENCY turns at once (0: half the cores) and, while no other request is in
        flight, up to SECRAG_POOL_MAX_SIZE less SECRAG_MAP_RESERVE_CONNECTIONS in all (one at least);
        SECRAG_MAP_CONCURRENCY within those for one map; SECRAG_MAP_TIMEOUT_SECONDS for a map's whole run."""
        connections = max(1, settings.pool_max_size - settings.map_reserve_connections)
        at_once = max(1, min(settings.map_process_concurrency or (cores or usable_cores()) // 2, connections))
        spare = 0 if settings.map_process_concurrency else connections - at_once
        width = min(settings.map_concurrency, at_once + spare)
        return cls(at_once, spare, width, settings.map_timeout_seconds, busy)

    def _idle(self) -> bool:
        """No API request in flight but maps."""
        return self.busy() <= self.maps()

    @contextmanager
    def turn(self, deadline: float) -> Iterator[bool]:
        """One turn of map work, waited for until the deadline (time.monotonic()); yields whether it was had
        (False: the map ran out of time waiting for other maps' work)."""
        held = self._free if self._free.acquire(blocking=False) else None
        if held is None and self._spare is not None and self._idle() and self._spare.acquire(blocking=False):
            held = self._spare
        if held is None and self._free.acquire(timeout=max(0.0, deadline - time.monotonic())):
            held = self._free
        try:
            yield held is not None
        finally:
            if held is not None:
                held.release()
