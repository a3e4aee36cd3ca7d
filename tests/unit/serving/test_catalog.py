"""The catalog's cached values: never loaded inside a request; a stale value is served while one
background thread refreshes it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from serving.search.catalog import Cached


def _wait(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_empty_value_is_served_until_the_background_load_ends_then_refreshes_keep_the_old_one() -> None:
    cached = Cached(ttl=0.0)
    release = threading.Event()
    calls: list[int] = []

    def slow_load() -> str:
        calls.append(1)
        release.wait(5)
        return f"v{len(calls)}"

    assert cached.get_or_refresh(slow_load, "empty") == "empty"  # nothing waits for the load
    assert cached.get_or_refresh(slow_load, "empty") == "empty"  # still loading: no second thread
    release.set()
    _wait(lambda: cached.value == "v1" and not cached.refreshing)
    time.sleep(0.01)
    release.clear()
    assert cached.get_or_refresh(slow_load, "empty") == "v1"  # stale: served while v2 loads
    release.set()
    _wait(lambda: cached.value == "v2" and not cached.refreshing)
    assert len(calls) == 2


def test_a_failed_refresh_keeps_the_previous_value() -> None:
    cached = Cached(ttl=0.0)
    assert cached.load_now(lambda: "kept") == "kept"

    def broken() -> str:
        raise RuntimeError("store unreachable")

    time.sleep(0.01)
    assert cached.get_or_refresh(broken, "empty") == "kept"
    _wait(lambda: not cached.refreshing)
    assert cached.get_or_refresh(broken, "empty") == "kept"
