"""A real database server stopped and started under the API: 503s while down, recovery once it is back.

The test asserts the order of events only, not how fast each is."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from secrag.db import database, embedded, migrations
from secrag.errors import EmbeddedServerError
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.settings import ServingSettings

# Bounds a hung test only: the capped backoff run (SECRAG_POOL_RECONNECT_TIMEOUT) ends in seconds, psycopg_pool's
# own (300 s, its delay doubling without a cap) long after it.
HUNG = 90.0
# Longer than a capped run and a connect together, so a request waits out a run still in its delay.
POOL_TIMEOUT = 10.0


class _GivenUp(logging.Handler):
    """Set when the pool gives up a reconnection run (psycopg_pool's warning, the one sign of it)."""

    def __init__(self, pool: str) -> None:
        super().__init__(logging.WARNING)
        self.pool, self.event = pool, threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(f"reconnection attempt in pool {self.pool!r} failed"):
            self.event.set()


@pytest.fixture
def given_up() -> Iterator[threading.Event]:
    handler = _GivenUp("secrag-serving")
    logger = logging.getLogger("psycopg.pool")
    logger.addHandler(handler)
    try:
        yield handler.event
    finally:
        logger.removeHandler(handler)


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A server of this test's own (stopping the shared one would disturb other tests)."""
    pgdata = tmp_path / "pgdata"
    server = embedded.start(pgdata)
    try:
        url = database.ensure_database(server, "secrag")
        with database.connect(url, autocommit=True) as conn:
            migrations.migrate(conn, sql_dir())
        yield pgdata, url
    finally:
        try:
            embedded.stop(pgdata)
        except EmbeddedServerError:
            if embedded.status(pgdata).running:  # a server that is gone anyway is not this test's failure
                raise


def test_503_while_down_and_the_first_request_after_it_is_back_is_answered(
    own_server: tuple[Path, str], settings_for: Callable[..., ServingSettings], given_up: threading.Event
) -> None:
    """Down: each request is refused with a 503 (never held), and the pool's backoff run ends while the database
    is still away (the cap at work: psycopg_pool's own would go on doubling its delay). Back: the next request
    starts a fresh run, which connects at once, and is answered."""
    pgdata, url = own_server
    settings = settings_for(url, mcp_enabled=False, pool_timeout=POOL_TIMEOUT)
    with TestClient(create_app(settings)) as api:
        assert api.get("/v1/sources").status_code == 200
        embedded.stop(pgdata)
        response = api.get("/v1/sources")  # answered, not held: the pool's timeout ends the wait
        assert response.status_code == 503 and response.headers["Retry-After"]
        assert given_up.wait(HUNG), "the pool's reconnection run did not end while the database was down"
        response = api.get("/v1/sources")
        assert response.status_code == 503 and response.headers["Retry-After"]  # still down: still refused
        embedded.start(pgdata)
        assert api.get("/v1/sources").status_code == 200  # the first request once it is back
        assert api.get("/readyz").status_code == 200
