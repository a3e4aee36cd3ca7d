"""What one API process lets its maps take: turns of map work (a batch of sentences encoded, or one sentence
searched on a reader connection) shared by every map at once: half the cores always, and the rest of the pool
less a reserve that other callers keep while no other request is in flight; how many searches one map runs at
once; and how long a map may run.

Turns are shared fairly between callers (a caller as its quotas know it: serving/access/quotas.py `Caller.bucket`,
an API key's principal or an anonymous client address): while maps of several callers wait, a free turn goes to
the waiting caller holding the fewest turns, and among equals to the one served least recently, so one
caller's many maps cannot take the turns of another's map; a caller alone takes every free turn."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from serving.observability.in_flight import InFlight
from serving.search.side_legs import usable_cores
from serving.settings import ServingSettings

PROCESS = ""  # the caller of maps run outside any request's quotas (`secrag map`)
REMEMBERED = 1024  # callers whose last turn is remembered beyond those holding or waiting for one


def _none_busy() -> int:
    return 0


@dataclass
class MapCapacity:
    at_once: int  # map work at once over every map of the process, whatever else runs
    spare: int  # more map work at once while no other API request is in flight
    width: int  # sentence searches one map runs at once, at most
    timeout: float  # seconds a map may run
    busy: Callable[[], int] = _none_busy  # the API's requests in flight, REST and MCP (maps' own included)
    maps: InFlight = field(default_factory=InFlight)  # maps running
    _changed: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)
    _held: Counter[str] = field(default_factory=Counter, init=False, repr=False)  # turns held, by caller
    _waiting: Counter[str] = field(default_factory=Counter, init=False, repr=False)  # turns waited for
    _served: dict[str, int] = field(default_factory=dict, init=False, repr=False)  # caller -> last turn's number
    _numbers: Iterator[int] = field(default_factory=itertools.count, init=False, repr=False)

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

    def held(self) -> int:
        """Turns held at this moment, over every caller."""
        with self._changed:
            return sum(self._held.values())

    def waiting(self) -> dict[str, int]:
        """Turns waited for at this moment, by caller."""
        with self._changed:
            return dict(self._waiting)

    def _free(self) -> bool:
        taken = sum(self._held.values())
        return taken < self.at_once or (taken < self.at_once + self.spare and self._idle())

    def _next(self) -> str:
        """The waiting caller a free turn goes to: the fewest turns held, then the longest since its last (a
        caller new to the maps first)."""
        return min(self._waiting, key=lambda caller: (self._held[caller], self._served.get(caller, -1)))

    @contextmanager
    def turn(self, deadline: float, caller: str = PROCESS) -> Iterator[bool]:
        """One turn of map work for `caller`, waited for until the deadline (time.monotonic()); yields whether
        it was had (False: the map ran out of time waiting for other maps' work)."""
        with self._changed:
            self._waiting[caller] += 1
            try:
                had = self._changed.wait_for(
                    lambda: self._free() and self._next() == caller, timeout=max(0.0, deadline - time.monotonic())
                )
            finally:
                self._waiting[caller] -= 1
                if not self._waiting[caller]:
                    del self._waiting[caller]
            if had:
                self._held[caller] += 1
                self._served[caller] = next(self._numbers)
            self._changed.notify_all()  # a turn may still be free for another waiter, or this one gave up
        try:
            yield had
        finally:
            if had:
                with self._changed:
                    self._held[caller] -= 1
                    if not self._held[caller]:
                        del self._held[caller]
                    if len(self._served) > REMEMBERED:  # kept across a map's gaps between turns, not forever
                        active = self._held.keys() | self._waiting.keys()
                        self._served = {c: n for c, n in self._served.items() if c in active}
                    self._changed.notify_all()
