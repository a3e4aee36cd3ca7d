"""A real database server stopped and started under the API: 503s while down, recovery once it is back.

How fast each is (503 latency, seconds to recover) is printed by `python bench/outage.py`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from secrag.db import database, embedded, migrations
from secrag.errors import EmbeddedServerError
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.settings import ServingSettings

OUTAGE_SECONDS = 16.0
# psycopg_pool's own backoff, uncapped, would next try 31 s after the stop (1, 2, 4, 8, 16 s apart): recovering
# before then shows the cap (SECRAG_POOL_RECONNECT_TIMEOUT) at work, whatever the machine's speed.
UNCAPPED_NEXT_TRY = 31.0


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


def test_503_while_down_and_recovery_before_an_uncapped_backoff_would_try_again(
    own_server: tuple[Path, str], settings_for: Callable[..., ServingSettings]
) -> None:
    pgdata, url = own_server
    with TestClient(create_app(settings_for(url, mcp_enabled=False, pool_timeout=1.0))) as api:
        assert api.get("/v1/sources").status_code == 200
        embedded.stop(pgdata)
        stopped = time.monotonic()
        answered = 0
        while time.monotonic() < stopped + OUTAGE_SECONDS:
            response = api.get("/v1/sources")  # answered, not held: the pool's timeout ends the wait
            assert response.status_code == 503 and response.headers["Retry-After"]
            answered += 1
            time.sleep(0.5)
        assert answered >= 2  # the outage spanned several requests, each refused
        embedded.start(pgdata)
        while api.get("/v1/sources").status_code != 200:
            assert time.monotonic() < stopped + UNCAPPED_NEXT_TRY, "the API waited for the pool's uncapped backoff"
            time.sleep(0.1)
        assert api.get("/readyz").status_code == 200
