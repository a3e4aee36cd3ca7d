"""A search's voter legs (neighbours, procedures: each its own HNSW walk and vote) run on a second reader
connection while the search's other legs run on its own, so that one client waits for the slower of the
two statements rather than their sum. Only while a core is idle: with as many searches, or API requests
(`busy`: serving/observability/in_flight.py), in flight as the API process has cores, a second statement would
only queue behind the others and cost its own planning and round trip, so the legs stay in the one statement.
Counting searches alone also split searches while the other requests were between their searches (in their
HTTP, dependencies or thread hop): 4 clients gave 90.7 and 92.6 req/s, and 92.4 and 96.3 with the requests
counted."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from serving.observability.in_flight import InFlight

log = logging.getLogger(__name__)
T = TypeVar("T")

# How long a search waits for a spare connection before running its voter legs itself: a spare one is
# either idle now or not worth waiting for.
SPARE_CONNECTION_WAIT = 0.005


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class SideLegs:
    """Runs one part of a search on a spare pooled connection, in a thread of its own, when a core is idle."""

    def __init__(
        self,
        pool: ConnectionPool,
        *,
        enabled: bool = True,
        cores: int | None = None,
        busy: Callable[[], int] = lambda: 0,
    ) -> None:
        self._pool = pool
        self._busy = busy
        self._cores = cores or usable_cores()
        self._enabled = enabled and self._cores > 1
        self._searches = InFlight()
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def search(self) -> AbstractContextManager[None]:
        """Counts a search in flight for as long as it runs."""
        return self._searches.counting()

    def start(self, run: Callable[[psycopg.Connection[Any]], T]) -> Future[T | None] | None:
        """`run` on a spare connection in the background: its future (whose result is None when no spare
        connection came), or None at once when no core is idle (the caller runs it itself)."""
        if not self._enabled:
            return None
        with self._lock:
            if self._searches() >= self._cores or self._busy() >= self._cores:
                return None
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self._cores - 1, thread_name_prefix="secrag-legs")
            return self._executor.submit(self._on_spare, run)

    def _on_spare(self, run: Callable[[psycopg.Connection[Any]], T]) -> T | None:
        try:
            conn = self._pool.getconn(timeout=SPARE_CONNECTION_WAIT)
        except PoolTimeout:
            return None
        try:
            return run(conn)
        finally:
            self._pool.putconn(conn)

    def close(self) -> None:
        """Stop the thread (the running part finishes first)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
