"""How a pool checks a connection before handing it out, without a round trip per checkout.

psycopg_pool's `ConnectionPool.check_connection` sends an empty statement to the server every time a connection
leaves the pool. For a search that is one more round trip beside its two or three statements, and with several
requests in flight each round trip is also a wait for the GIL. A connection that came back to the pool moments ago
went through the pool's reset then (a round trip that would have failed on a dead connection), so
`ReturnedConnections` only looks at its socket: a server that restarted, stopped or terminated the backend has
sent an error and closed it, which makes the socket readable. A readable socket, or a connection that sat in the
pool for longer than `quiet_seconds`, gets the full check, and a failed check makes the pool open a new
connection: a restarted server still costs one failed check, not a failed request. Bytes a server sends unasked
(a notice, a TLS session ticket) also make the socket readable; they cost the full check, never a wrong answer.
"""

from __future__ import annotations

import select
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

QUIET_SECONDS = 30.0  # a connection back for longer gets the full round trip (idle timeouts, dropped routes)


def readable(fd: int) -> bool:
    """Whether the socket has something to read (or was closed): an idle connection's server says nothing."""
    if hasattr(select, "poll"):
        poller = select.poll()  # select.select cannot take a descriptor above 1023
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # pragma: no cover - Windows has no poll


class ReturnedConnections:
    """The pool's `reset` and `check` callbacks: `reset` runs the caller's reset and notes when the connection
    came back; `check` skips the round trip for a connection back for less than `quiet_seconds` whose socket
    is quiet."""

    def __init__(
        self,
        reset: Callable[[psycopg.Connection[Any]], None] | None = None,
        *,
        quiet_seconds: float = QUIET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reset = reset
        self._quiet_seconds = quiet_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._back_at: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = weakref.WeakKeyDictionary()
        self.round_trips = 0  # full checks made

    def reset(self, conn: psycopg.Connection[Any]) -> None:
        if self._reset is not None:
            self._reset(conn)  # raises on a dead connection: the pool then discards it
        with self._lock:
            self._back_at[conn] = self._clock()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        with self._lock:
            back_at = self._back_at.pop(conn, None)
        recent = back_at is not None and self._clock() - back_at < self._quiet_seconds
        if recent and not conn.closed and not readable(conn.fileno()):
            return
        with self._lock:
            self.round_trips += 1
        ConnectionPool.check_connection(conn)
