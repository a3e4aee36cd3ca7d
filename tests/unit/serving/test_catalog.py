"""The catalog's cached values: a stale value is served while one background thread refreshes it."""

from __future__ import annotations

import threading
import time

from serving.catalog import Cached


def _wait(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_first_value_is_loaded_then_refreshed_in_the_background() -> None:
    cached = Cached(ttl=0.0)
    release = threading.Event()
    calls: list[str] = []

    def slow_refresh() -> str:
        calls.append("refresh")
        release.wait(5)
        return "new"

    assert cached.get_or_refresh(lambda: "first", slow_refresh) == "first"
    time.sleep(0.01)
    assert cached.get_or_refresh(lambda: "unused", slow_refresh) == "first"  # stale, refresh started
    assert cached.get_or_refresh(lambda: "unused", slow_refresh) == "first"  # still refreshing: no second thread
    release.set()
    _wait(lambda: not cached.refreshing)
    assert calls == ["refresh"]
    assert cached.value == "new"


def test_a_failed_refresh_keeps_the_previous_value() -> None:
    cached = Cached(ttl=0.0)

    def broken() -> str:
        raise RuntimeError("store unreachable")

    assert cached.get_or_refresh(lambda: "kept", broken) == "kept"
    time.sleep(0.01)
    assert cached.get_or_refresh(lambda: "unused", broken) == "kept"
    _wait(lambda: not cached.refreshing)
    assert cached.get_or_refresh(lambda: "unused", broken) == "kept"
