"""MapCapacity: the maps' connections (the pool less a reserve), one map's width and its deadline."""

from __future__ import annotations

import threading
import time

from serving.mapping.capacity import MapCapacity
from serving.settings import ServingSettings


def _capacity(**settings: object) -> MapCapacity:
    return MapCapacity.from_settings(ServingSettings(_env_file=None, **settings))  # type: ignore[call-arg]


def test_the_reserve_stays_for_other_callers() -> None:
    capacity = _capacity(pool_max_size=8, map_reserve_connections=2, map_concurrency=16, map_timeout_seconds=7)
    assert (capacity.connections, capacity.width, capacity.timeout) == (6, 6, 7)
    assert _capacity(pool_max_size=2, map_reserve_connections=5).connections == 1  # one at least
    assert _capacity(pool_max_size=8, map_reserve_connections=0, map_concurrency=2).width == 2


def test_a_connection_is_waited_for_until_the_deadline_only() -> None:
    capacity = MapCapacity(connections=1, width=1, timeout=1)
    released = threading.Event()
    held = threading.Event()

    def hold() -> None:
        with capacity.connection(time.monotonic() + 60) as had:
            assert had
            held.set()
            released.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(60)
    with capacity.connection(time.monotonic()) as had:  # the deadline has come: no wait
        assert not had
    released.set()
    holder.join(60)
    with capacity.connection(time.monotonic()) as had:  # given back
        assert had
