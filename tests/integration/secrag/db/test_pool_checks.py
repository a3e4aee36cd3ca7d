"""A pool's check before handing a connection out, on a real server: a round trip only when one is due, and a
terminated backend never reaches a request."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from secrag.db import database
from secrag.db.pool_checks import ReturnedConnections, readable


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def wait_for(done: Callable[[], bool], seconds: float = 120.0) -> None:
    """Until `done` holds; `seconds` bounds a hung test only."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def backend_pid(pool: ConnectionPool[Any]) -> int:
    with pool.connection() as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        return int(row[0])


def test_a_connection_back_moments_ago_goes_out_without_a_round_trip(db_url: str) -> None:
    clock, resets = Clock(), list[psycopg.Connection[Any]]()
    returned = ReturnedConnections(resets.append, quiet_seconds=30, clock=clock)
    with ConnectionPool(
        db_url, min_size=1, max_size=1, reset=returned.reset, check=returned.check, kwargs={"autocommit": True}
    ) as pool:
        first = backend_pid(pool)
        assert returned.round_trips == 1  # a new connection was never reset: checked in full
        assert backend_pid(pool) == first and returned.round_trips == 1
        wait_for(lambda: len(resets) == 2)  # the pool resets a returned connection in its own thread
        clock.now += 31  # back for longer than quiet_seconds: the full check again
        assert backend_pid(pool) == first and returned.round_trips == 2
        wait_for(lambda: len(resets) == 3)  # the caller's reset runs on each return


def test_a_terminated_backend_costs_a_check_not_a_request(db_url: str) -> None:
    pool = database.open_pool(
        db_url, min_size=1, max_size=1, check=True, configure=lambda c: setattr(c, "autocommit", True)
    )
    with pool:
        first = backend_pid(pool)
        with psycopg.connect(db_url, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", [first]).fetchone() == (True,)
        assert backend_pid(pool) != first  # the request got a fresh connection, not the dead one


def test_an_idle_connection_is_quiet_until_its_backend_goes(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn, psycopg.connect(db_url, autocommit=True) as admin:
        conn.execute("SELECT 1")
        assert not readable(conn.fileno())
        pid = conn.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
        assert readable(conn.fileno())
