"""Session fixtures for the serving tests: one real store (built once), API clients over it."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.types import ASGIApp

from secrag.db import database
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.search.encoder import shared_encoder
from serving.search.leg_runs import LegRuns
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy
from tests.plugins.loopback_server import served

from . import corpus

SQL_DIR = sql_dir()
KEYS = {
    "alice-key": ("acme", "alice", ["blue"]),
    "bob-key": ("acme", "bob", ["red"]),
    "carol-key": ("acme", "carol", []),
    "gina-key": ("globex", "gina", []),
}


@pytest.fixture(scope="session")
def serving_db_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    """A dedicated database holding the corpus subset, embedded with the real model."""
    with migrated_copy(pg_server_url, template_db, f"secrag_serving_{os.getpid()}") as url:
        with database.connect(url, autocommit=True) as conn:
            corpus.build(conn, SQL_DIR, shared_encoder("all-MiniLM-L6-v2").embedder)
        yield url


@pytest.fixture(scope="session")
def api_keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = ["keys:"]
    for key, (tenant, user, groups) in KEYS.items():
        # digests: the suite's keys are short names, which a plain `key:` entry refuses (too weak)
        digest = hashlib.sha256(key.encode()).hexdigest()
        lines.append(f"  - {{key_sha256: {digest}, tenant: {tenant}, user: {user}, groups: {groups}}}")
    path = tmp_path_factory.mktemp("serving") / "keys.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def settings_for(api_keys_file: Path) -> Callable[..., ServingSettings]:
    def make(url: str, **overrides: Any) -> ServingSettings:  # noqa: ANN401
        values: dict[str, Any] = {
            "database_url": url,
            "api_keys_file": api_keys_file,
            "pool_max_size": 4,
            # the suite is one busy caller; test_quotas.py sets the limits it tests
            "anonymous_rate_per_minute": 0,
            "rate_per_minute": 0,
            "failed_keys_per_minute": 0,
            "anonymous_heavy_concurrency": 0,
            "heavy_concurrency": 0,
            # tests change the store and search again at once; test_result_cache.py turns the cache on
            "result_cache_size": 0,
            # apps are created by the dozen; tests/integration/serving/test_warm_up.py turns it on
            "warm_up": False,
        }
        values.update(overrides)
        return ServingSettings(_env_file=None, **values)  # type: ignore[call-arg]

    return make


@pytest.fixture(scope="session")
def client(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    """The API over the corpus store (raises server exceptions, so a 500 fails the test loudly)."""
    with TestClient(create_app(settings_for(serving_db_url))) as c:
        yield c


def search(client: TestClient, query: str, key: str | None = None, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    headers = {"X-API-Key": key} if key else {}
    response = client.post("/v1/search", json={"query": query, **body}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def doc_ids(payload: dict[str, Any]) -> list[str]:
    return [r["doc_id"] for r in payload["results"]]


@pytest.fixture
def live_api(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[str]:
    """The API served by uvicorn on a loopback port; yields its base URL (http://127.0.0.1:port)."""
    with live_server(serving_db_url, settings_for) as base:
        yield base


@contextmanager
def live_server(url: str, settings_for: Callable[..., ServingSettings], **overrides: Any) -> Iterator[str]:  # noqa: ANN401
    """The API over `url` with these settings, served by uvicorn on a loopback port: its base URL."""

    def app_for(port: int) -> ASGIApp:
        return create_app(settings_for(url, mcp_allowed_hosts=[f"127.0.0.1:{port}"], **overrides))

    with served(app_for, lifespan="on") as base:
        yield base


@pytest.fixture
def legs(monkeypatch: pytest.MonkeyPatch) -> list[list[dict[str, Any]]]:
    """Each search's legs' rows, in the order the searches ran."""
    runs: list[list[dict[str, Any]]] = []
    rows = LegRuns.rows

    def recorded(self: LegRuns, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:  # noqa: ANN401
        out = rows(self, *args, **kwargs)
        runs.append(out)
        return out

    monkeypatch.setattr(LegRuns, "rows", recorded)
    return runs


def by_leg(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """A search's legs' rows as (leg, chunk id) -> score."""
    return {(r["leg"], r["chunk_id"]): r["score"] for r in rows}
