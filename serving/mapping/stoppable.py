"""A map's searches' reader connections, which the map's deadline stops: from then on none is lent, the
statements running on those lent are cancelled (again until each is given back: a search runs several
statements in turn on its connection), and stopping returns once every one is back in the pool, so the map
answers after its searches have let go of their statements, connections and turns."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from serving.search.connections import Connections

log = logging.getLogger(__name__)

CANCEL_AGAIN = 0.05  # seconds between cancels of a connection not yet given back (its next statement started)
CANCEL_WAIT = 2.0  # seconds one cancel request may take to reach the server


class OutOfTime(Exception):
    """A map's search that did not run before the map's deadline (or was stopped by it)."""


class Stoppable:
    """The pool's connections for one map's searches, until the map stops them."""

    def __init__(self, pool: Connections, deadline: float) -> None:
        self._pool = pool
        self._deadline = deadline
        self._changed = threading.Condition()
        self._lent: set[psycopg.Connection[Any]] = set()
        self._stopped = False

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool, waited for until the deadline at most; OutOfTime once stopped."""
        left = max(0.0, self._deadline - time.monotonic())
        if self._stopped or not left:
            raise OutOfTime
        with self._pool.connection(timeout=left if timeout is None else min(timeout, left)) as conn:
            with self._changed:
                if self._stopped:
                    raise OutOfTime
                self._lent.add(conn)
            try:
                yield conn
            finally:
                with self._changed:  # never while stop() cancels: the connection is not back in the pool yet
                    self._lent.discard(conn)
                    self._changed.notify_all()

    def stop(self) -> int:
        """No more connections lent; the running statements cancelled until every connection is given back.
        Returns how many connections were lent when it was called."""
        with self._changed:
            self._stopped = True
            stopped = len(self._lent)
            while self._lent:
                for conn in self._lent:
                    try:
                        conn.cancel_safe(timeout=CANCEL_WAIT)
                    except psycopg.Error as exc:  # the statement ends on its own (statement_timeout)
                        log.warning("cannot cancel a map's statement", extra={"error": type(exc).__name__})
                self._changed.wait(CANCEL_AGAIN)
        return stopped
