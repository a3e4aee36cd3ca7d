"""The per-process result cache: a repeated search is answered from it until the store changes, and
never across callers."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings


@pytest.fixture(scope="module")
def cached(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(serving_db_url, mcp_enabled=False, result_cache_size=8))) as api:
        yield api


def _cache(api: TestClient) -> dict[str, int]:
    return api.app.state.service.results.info()  # type: ignore[attr-defined,no-any-return]  # /v1/stats shows none


def test_a_repeated_search_is_a_hit_with_the_same_results(cached: TestClient) -> None:
    body = {"query": "rundll32 proxy execution", "k": 5}
    first = cached.post("/v1/search", json=body).json()
    before = _cache(cached)
    second = cached.post("/v1/search", json=body).json()
    after = _cache(cached)
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"]
    assert first["results"] == second["results"] and second["model"] == first["model"]
    cached.post("/v1/search", json={**body, "k": 4})  # another request: its own entry
    assert _cache(cached)["misses"] == after["misses"] + 1


def test_callers_never_share_entries(cached: TestClient) -> None:
    body = {"query": "acme incident notes", "k": 10}
    alice = cached.post("/v1/search", json=body, headers={"X-API-Key": "alice-key"}).json()
    anonymous = cached.post("/v1/search", json=body).json()
    assert any(r["source"].startswith("acme") for r in alice["results"])
    assert not any(r["source"].startswith("acme") for r in anonymous["results"])


def test_a_publish_invalidates(cached: TestClient, serving_db_url: str) -> None:
    body = {"query": "certutil download", "k": 3}
    cached.post("/v1/search", json=body)
    hits = _cache(cached)["hits"]
    with database.connect(serving_db_url, autocommit=True) as conn:  # what every publish does to the version
        conn.execute("UPDATE source_counts SET updated_at = now() WHERE source = 'lolbas'")
    cached.app.state.service.catalog._data_version.clear()  # type: ignore[attr-defined]  # else within 1 s
    cached.post("/v1/search", json=body)
    assert _cache(cached)["hits"] == hits
