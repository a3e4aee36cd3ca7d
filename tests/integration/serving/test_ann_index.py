"""The in-process HNSW index (serving/search/ann_index.py) against the real store: an unfiltered search answers
as PostgreSQL's walk does, a tenant's rows never come from it, and a publish is walked in PostgreSQL until the
index is built again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from serving.search.ann_index import AnnIndex, Walked
from serving.settings import ServingSettings

from .conftest import by_leg, search

BODIES: list[dict[str, Any]] = [
    {"query": "credential dumping from lsass memory", "k": 10},
    {"query": "a scheduled task created for persistence", "k": 10},
    {"query": "The actor used rundll32 to load a malicious DLL from a network share.", "k": 10},
    {"query": "lsass memory read by a tool", "k": 10, "mode": "vector"},
]


class Spy:
    """Records whether each nearest() a search asks of the index was answered from memory."""

    def __init__(self, index: AnnIndex) -> None:
        self.calls: list[bool] = []
        self._nearest = index.nearest

    def __call__(self, *args: Any, **kwargs: Any) -> Walked | None:  # noqa: ANN401
        found = self._nearest(*args, **kwargs)
        self.calls.append(found is not None)
        return found


def _build(client: TestClient) -> AnnIndex:
    service = client.app.state.service  # type: ignore[attr-defined]
    encoder = service.searcher.encoder
    with service.pool.connection() as conn:
        versions = service.catalog.source_versions(conn, fresh=True)
    assert service.ann_index.build(encoder.model_id, versions, encoder.dimensions)
    return service.ann_index  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def apps(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[dict[str, TestClient]]:
    from serving.api.app import create_app

    made = {
        "index": settings_for(serving_db_url, search_ann_index_mb=64),
        "off": settings_for(serving_db_url, search_ann_index_mb=0),
    }
    clients = {name: TestClient(create_app(settings)) for name, settings in made.items()}
    for c in clients.values():
        c.__enter__()
    _build(clients["index"])
    yield clients
    for c in clients.values():
        c.__exit__(None, None, None)


@pytest.fixture
def spy(apps: dict[str, TestClient]) -> Iterator[Spy]:
    index = apps["index"].app.state.service.ann_index  # type: ignore[attr-defined]
    watching = Spy(index)
    index.nearest = watching
    yield watching
    del index.nearest


def _ranked(payload: dict[str, Any]) -> list[str]:
    return [r["chunk_id"] for r in payload["results"]]


@pytest.mark.parametrize("body", BODIES, ids=lambda b: b["query"][:24])
def test_an_unfiltered_search_answers_as_postgres_walks(
    apps: dict[str, TestClient], spy: Spy, legs: list[list[dict[str, Any]]], body: dict[str, Any]
) -> None:
    """The legs' candidates with the same scores (the index holds float16 vectors) and the same answer. Both walks
    are approximate, each keeping the store's ef_search candidates, so one may find a chunk the other missed."""
    index, off = search(apps["index"], **body), search(apps["off"], **body)
    through_index, through_postgres = (by_leg(run) for run in legs)
    assert spy.calls == [True]
    shared = through_index.keys() & through_postgres.keys()
    assert through_postgres and len(shared) >= 0.97 * len(through_postgres)
    scores = [through_index[key] for key in shared]
    assert scores == pytest.approx([through_postgres[key] for key in shared], abs=2e-3)
    assert off["results"] and _ranked(index) == _ranked(off)


def test_a_tenants_search_walks_in_postgres(apps: dict[str, TestClient], spy: Spy) -> None:
    body = {"query": "mimikatz credential dumping", "k": 10, "key": "alice-key"}
    index, off = search(apps["index"], **body), search(apps["off"], **body)
    assert "acme_notes" in {r["source"] for r in index["results"]}
    assert _ranked(index) == _ranked(off)
    assert spy.calls == []  # never asked


def test_the_index_holds_no_tenants_row(apps: dict[str, TestClient], serving_db_url: str) -> None:
    built = apps["index"].app.state.service.ann_index._built  # type: ignore[attr-defined]
    model = apps["index"].app.state.service.searcher.encoder.model_id  # type: ignore[attr-defined]
    with database.connect(serving_db_url) as conn:
        rows = conn.execute("SELECT chunk_id, tenant FROM chunk_vectors WHERE model_id = %s", [model]).fetchall()
    tenants = {chunk for chunk, tenant in rows if tenant is not None}
    assert tenants and not tenants & set(built.chunk_ids)
    assert set(built.chunk_ids) == {chunk for chunk, tenant in rows if tenant is None}
    assert len(built.chunk_ids) == built.index.size and np.unique(built.chunk_ids).size == len(built.chunk_ids)


def test_a_publish_is_walked_in_postgres_until_the_index_is_built_again(
    apps: dict[str, TestClient], spy: Spy, serving_db_url: str
) -> None:
    service = apps["index"].app.state.service  # type: ignore[attr-defined]
    body = BODIES[0]
    with database.connect(serving_db_url, autocommit=True) as conn:  # what a publish of sigma does to its version
        conn.execute("UPDATE source_counts SET updated_at = now() WHERE source = 'sigma'")
    service.catalog._source_versions.clear()  # the catalog reads versions once a second; now, for the test
    assert _ranked(search(apps["index"], **body)) == _ranked(search(apps["off"], **body))
    assert spy.calls == [False]
    service.ann_index.close()  # waits for the build the search started
    search(apps["index"], **body)
    assert spy.calls[-1] is True
