"""A real database server stopped and started under the API: fast 503s while down, recovery within seconds."""

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

OUTAGE_SECONDS = 16.0  # an uncapped backoff would next try at 31 s (1, 2, 4, 8, 16 s apart) and fail this test


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


def test_503_while_down_and_recovery_within_5_s(
    own_server: tuple[Path, str], settings_for: Callable[..., ServingSettings]
) -> None:
    pgdata, url = own_server
    with TestClient(create_app(settings_for(url, mcp_enabled=False, pool_timeout=1.0))) as api:
        assert api.get("/v1/sources").status_code == 200
        embedded.stop(pgdata)
        down_until = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < down_until:
            started = time.monotonic()
            response = api.get("/v1/sources")
            assert response.status_code == 503 and response.headers["Retry-After"]
            assert time.monotonic() - started < 2.0
            time.sleep(0.5)
        embedded.start(pgdata)
        back = time.monotonic()
        while api.get("/v1/sources").status_code != 200:
            assert time.monotonic() - back < 5.0, "the API did not recover within 5 s of the database"
            time.sleep(0.1)
        assert api.get("/readyz").status_code == 200
