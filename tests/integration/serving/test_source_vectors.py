"""Online sources' vectors held in the API's memory (serving/search/source_vectors.py) against the real store:
the same answers as PostgreSQL's exact distances, used only at the source's current version, never for a
user folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.search.source_vectors import Nearest, SourceVectors, reader
from serving.settings import ServingSettings

from .conftest import by_leg, search

BODIES: list[dict[str, Any]] = [
    {"query": "a scheduled task created for persistence", "k": 10, "filters": {"sources": ["sigma"]}},
    {"query": "credential dumping from lsass memory", "k": 10, "filters": {"sources": ["sigma", "lolbas"]}},
    {"query": "lsass memory read by a tool", "k": 10, "mode": "vector", "filters": {"sources": ["lolbas"]}},
    # a sentence: the procedures voter leg, whose voting source is atomic in this test's search.yaml
    {"query": "The actor used rundll32 to load a malicious DLL from a network share.", "k": 10},
]
HELD = ("sigma", "lolbas", "atomic")


class Spy:
    """Records each nearest() a search asks of the held vectors: its sources and whether memory answered."""

    def __init__(self, vectors: SourceVectors) -> None:
        self.calls: list[tuple[tuple[str, ...], bool]] = []
        self._nearest = vectors.nearest

    def __call__(self, model_id: str, sources: Any, versions: Any, qvec: np.ndarray, k: int) -> Nearest | None:  # noqa: ANN401
        found = self._nearest(model_id, sources, versions, qvec, k)
        self.calls.append((tuple(sources), found is not None))
        return found


@pytest.fixture(scope="module")
def apps(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, TestClient]]:
    """The API with its sources' vectors held in memory, and without; atomic votes as the procedures leg's source."""
    shipped = ServingSettings.model_fields["search_config"].get_default(call_default_factory=True)
    config = yaml.safe_load(Path(shipped).read_text(encoding="utf-8"))
    config["procedures"]["sources"] = ["atomic"]
    path = tmp_path_factory.mktemp("held") / "search.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    made = {
        "held": settings_for(serving_db_url, search_config=path, search_source_vectors_mb=64),
        "off": settings_for(serving_db_url, search_config=path, search_source_vectors_mb=0),
    }
    clients = {name: TestClient(create_app(settings)) for name, settings in made.items()}
    for c in clients.values():
        c.__enter__()
    service = clients["held"].app.state.service  # type: ignore[attr-defined]
    encoder = service.searcher.encoder
    for source in HELD:
        assert service.source_vectors.load(encoder.model_id, source, encoder.dimensions)
    yield clients
    for c in clients.values():
        c.__exit__(None, None, None)


@pytest.fixture
def spy(apps: dict[str, TestClient]) -> Iterator[Spy]:
    vectors = apps["held"].app.state.service.source_vectors  # type: ignore[attr-defined]
    watching = Spy(vectors)
    vectors.nearest = watching
    yield watching
    del vectors.nearest


def _ranked(payload: dict[str, Any]) -> list[str]:
    return [r["chunk_id"] for r in payload["results"]]


@pytest.mark.parametrize("body", BODIES, ids=lambda b: b["query"][:24])
def test_held_vectors_give_the_legs_postgres_gives(
    apps: dict[str, TestClient], spy: Spy, legs: list[list[dict[str, Any]]], body: dict[str, Any]
) -> None:
    """Every leg the same candidates with the same scores (to float noise: PostgreSQL sums the votes of
    documents with one label set in their labels' order, so their last bits differ and their order with
    them; the held vectors' equal votes tie and go by chunk id)."""
    search(apps["held"], **body)
    search(apps["off"], **body)
    held, off = (by_leg(run) for run in legs)
    assert off and held.keys() == off.keys()
    assert [held[key] for key in off] == pytest.approx(list(off.values()), abs=1e-6)
    assert spy.calls and all(used for _, used in spy.calls), spy.calls


def test_a_vector_search_ranks_as_postgres_does(apps: dict[str, TestClient], spy: Spy) -> None:
    body = BODIES[2]
    held, off = search(apps["held"], **body), search(apps["off"], **body)
    assert off["results"] and _ranked(held) == _ranked(off)
    assert [r["score"] for r in held["results"]] == pytest.approx([r["score"] for r in off["results"]], abs=1e-6)
    assert spy.calls == [(("lolbas",), True)]


def test_a_publish_is_served_from_postgres_until_the_source_is_loaded_again(
    apps: dict[str, TestClient], spy: Spy, serving_db_url: str
) -> None:
    service = apps["held"].app.state.service  # type: ignore[attr-defined]
    body = BODIES[2]
    with database.connect(serving_db_url, autocommit=True) as conn:  # what a publish of lolbas does to its version
        conn.execute("UPDATE source_counts SET updated_at = now() WHERE source = 'lolbas'")
    service.catalog._source_versions.clear()  # the catalog reads versions once a second; now, for the test
    assert _ranked(search(apps["held"], **body)) == _ranked(search(apps["off"], **body))
    assert spy.calls == [(("lolbas",), False)]
    service.source_vectors.close()  # waits for the reload the search started
    search(apps["held"], **body)
    assert spy.calls[-1] == (("lolbas",), True)


def test_a_user_folder_is_never_held(apps: dict[str, TestClient], spy: Spy) -> None:
    only_hers = {"sources": ["acme_notes"]}
    answer = search(apps["held"], "mimikatz credential dumping", key="alice-key", k=5, filters=only_hers)
    assert answer["results"] and {r["source"] for r in answer["results"]} == {"acme_notes"}
    assert all("acme_notes" not in sources for sources, _ in spy.calls)


def test_a_cached_response_never_comes_from_vectors_older_than_its_key(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    """With the result cache on, the sources' versions are read on the search's own connection, as the data
    version its response is kept under is: no second in which a publish is served from the old vectors."""
    settings = settings_for(serving_db_url, search_source_vectors_mb=64, result_cache_size=64)
    with TestClient(create_app(settings)) as api:
        service = api.app.state.service  # type: ignore[attr-defined]
        encoder = service.searcher.encoder
        assert service.source_vectors.load(encoder.model_id, "lolbas", encoder.dimensions)
        spy = Spy(service.source_vectors)
        service.source_vectors.nearest = spy
        body = BODIES[2]
        search(api, **body)
        with database.connect(serving_db_url, autocommit=True) as conn:  # a publish of lolbas, within the second
            conn.execute("UPDATE source_counts SET updated_at = now() WHERE source = 'lolbas'")
        search(api, **{**body, "k": 9})  # not the cached request
        assert spy.calls == [(("lolbas",), True), (("lolbas",), False)]


def test_the_loader_tells_whether_a_model_has_every_chunk_and_each_chunks_techniques(
    apps: dict[str, TestClient], serving_db_url: str
) -> None:
    """Held.complete (a model serving only whole sources, the sentence model, reads it) and Held.labels (the map's
    votes read them) as sql/queries/serving.sql's source_vectors gives them."""
    service = apps["held"].app.state.service  # type: ignore[attr-defined]
    load = reader(service.pool, service.queries.source_vectors, 30_000)
    encoder = service.searcher.encoder
    held = load(encoder.model_id, "mitre_attack", 100_000, encoder.dimensions)
    assert held is not None and held.complete and held.chunk_ids
    with database.connect(serving_db_url) as conn:
        techniques = dict(conn.execute("SELECT doc_id, techniques FROM documents WHERE source = 'mitre_attack'"))
    assert held.labels == tuple(tuple(techniques[doc]) for doc in held.doc_ids)
    lsass = held.doc_ids.index("mitre_attack:T1003.001")
    assert "T1003.001" in held.labels[lsass]  # a technique document is labelled with its technique
    other = load("all-MiniLM-L6-v2-int8", "mitre_attack", 100_000, encoder.dimensions)  # the corpus has none of it
    assert other is not None and not other.complete and other.chunk_ids == [] and other.version == held.version
    assert load(encoder.model_id, "no_such_source", 100_000, encoder.dimensions) is None
