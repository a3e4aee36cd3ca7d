"""The sentence path of the search (serving/search/searcher.py, sentence_model.py, leg_shapes.py) over the serving
corpus. The corpus is embedded with the general model only, so the sentence model is pinned to that model: its
vectors are the general ones, and a sentence searched on the sentence path must rank as with the path off, which
proves the wiring (the sentence model's encoder, its held vectors, the floor of its model) without a trained
model. The spy tells which path each leg took."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.search.encoder import QueryEncoder
from serving.search.source_vectors import Nearest, SourceVectors
from serving.settings import ServingSettings

from .conftest import search

GENERAL = "all-MiniLM-L6-v2"  # the model the corpus is embedded with (conftest.serving_db_url)
ATTACK = {"sources": ["mitre_attack"]}
SENTENCE = "The attackers dumped credentials from LSASS memory with Mimikatz on the domain controller."
BODY: dict[str, Any] = {"query": SENTENCE, "k": 10, "filters": ATTACK}


class Spy:
    """Records each nearest() asked of the held vectors: its model, sources, whether the model must have them
    whole (the sentence path asks so) and whether memory answered."""

    def __init__(self, vectors: SourceVectors) -> None:
        self.calls: list[tuple[str, tuple[str, ...], bool, bool]] = []
        self._nearest = vectors.nearest

    def __call__(
        self,
        model_id: str,
        sources: Sequence[str],
        versions: Any,  # noqa: ANN401
        qvec: np.ndarray,
        k: int,
        *,
        complete: bool = False,
    ) -> Nearest | None:
        found = self._nearest(model_id, sources, versions, qvec, k, complete=complete)
        self.calls.append((model_id, tuple(sources), complete, found is not None))
        return found

    @property
    def sentence_calls(self) -> list[tuple[str, tuple[str, ...], bool, bool]]:
        return [call for call in self.calls if call[2]]


def _service(client: TestClient) -> Any:  # noqa: ANN401
    return client.app.state.service  # type: ignore[attr-defined]


def _until(check: Callable[[], object]) -> object:
    """Poll what the API loads in the background (bounded: what never comes fails the test)."""
    for _ in range(1200):
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("never loaded")


def _hold_attack(client: TestClient) -> None:
    """The ATT&CK technique documents' vectors held now (the searches would load them in the background)."""
    service = _service(client)
    assert service.source_vectors.load(GENERAL, "mitre_attack", service.searcher.encoder.dimensions)


@pytest.fixture(scope="module")
def apps(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[dict[str, TestClient]]:
    """The API with the sentence path on (the general model pinned as its model) and off."""
    made = {
        "sentence": settings_for(serving_db_url, sentence_model=GENERAL, search_source_vectors_mb=64),
        "off": settings_for(serving_db_url, sentence_model="none", search_source_vectors_mb=64),
    }
    clients = {name: TestClient(create_app(settings)) for name, settings in made.items()}
    for c in clients.values():
        c.__enter__()
        _hold_attack(c)
    sentence = _service(clients["sentence"]).sentence
    assert sentence is not None and _service(clients["off"]).sentence is not None
    encoder = _until(sentence.encoder)
    assert isinstance(encoder, QueryEncoder) and encoder.model_id == GENERAL
    assert _service(clients["off"]).sentence.encoder() is None
    yield clients
    for c in clients.values():
        c.__exit__(None, None, None)


@pytest.fixture
def spies(apps: dict[str, TestClient]) -> Iterator[dict[str, Spy]]:
    watching: dict[str, Spy] = {}
    for name, client in apps.items():
        vectors = _service(client).source_vectors
        watching[name] = Spy(vectors)
        vectors.nearest = watching[name]
    yield watching
    for client in apps.values():
        del _service(client).source_vectors.nearest


def _ranked(payload: dict[str, Any]) -> list[str]:
    return [r["chunk_id"] for r in payload["results"]]


def test_a_sentence_ranks_as_with_the_general_model(apps: dict[str, TestClient], spies: dict[str, Spy]) -> None:
    on, off = search(apps["sentence"], **BODY), search(apps["off"], **BODY)
    assert on["query_type"] == "sentence" and on["model"] == off["model"] == GENERAL
    assert off["results"] and _ranked(on) == _ranked(off)
    assert [r["score"] for r in on["results"]] == pytest.approx([r["score"] for r in off["results"]], abs=1e-9)
    assert on["vector_threshold"] == off["vector_threshold"]  # the sentence model's floor: the same model's
    assert on["below_vector_threshold"] == off["below_vector_threshold"]
    # the vector leg filtered to ATT&CK read the sentence model's held vectors, whole; off, the general model's
    assert spies["sentence"].sentence_calls == [(GENERAL, ("mitre_attack",), True, True)]
    assert spies["off"].sentence_calls == [] and (GENERAL, ("mitre_attack",), False, True) in spies["off"].calls


def test_a_query_embedding_keeps_the_general_path(apps: dict[str, TestClient], spies: dict[str, Spy]) -> None:
    """A caller's vector is the serving model's: the legs read the serving model's vectors with it."""
    encoder = _service(apps["sentence"]).searcher.encoder
    plain = search(apps["off"], **BODY)
    given = {"model": GENERAL, "values": [float(x) for x in encoder.encode(plain["enriched_query"])]}
    on = search(apps["sentence"], **BODY, query_embedding=given)
    assert on["query_type"] == "sentence" and _ranked(on) == _ranked(plain)
    assert spies["sentence"].sentence_calls == []
    assert (GENERAL, ("mitre_attack",), False, True) in spies["sentence"].calls


@pytest.mark.parametrize(
    ("query", "mode", "shape"),
    [
        ("lsass credential dumping", "hybrid", "keyword"),
        (f"{SENTENCE} Then they ran encoded PowerShell commands to download the next stage.", "hybrid", "natural"),
        (SENTENCE, "vector", "sentence"),
    ],
    ids=["keyword", "natural", "vector-mode"],
)
def test_only_hybrid_sentences_take_the_sentence_path(
    apps: dict[str, TestClient], spies: dict[str, Spy], query: str, mode: str, shape: str
) -> None:
    body = {**BODY, "query": query, "mode": mode}
    on, off = search(apps["sentence"], **body), search(apps["off"], **body)
    assert on["query_type"] == shape and _ranked(on) == _ranked(off)
    assert spies["sentence"].sentence_calls == []
    assert spies["sentence"].calls and all(call[3] for call in spies["sentence"].calls)  # held: the general model's


def test_a_cached_response_is_not_served_once_the_sentence_model_serves(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    """The result cache keys a response on the models it depends on: one made before the sentence model was
    loaded is not the answer once it serves."""
    settings = settings_for(serving_db_url, sentence_model=GENERAL, search_source_vectors_mb=64, result_cache_size=64)
    with TestClient(create_app(settings)) as api:
        _hold_attack(api)
        service = _service(api)
        sentence = service.sentence
        assert sentence is not None
        gate = threading.Event()
        load = sentence.make_encoder

        def held_back(model_id: str) -> QueryEncoder:
            assert gate.wait(60), "the test never let the sentence model load"
            return load(model_id)

        sentence.make_encoder = held_back
        spy = Spy(service.source_vectors)
        service.source_vectors.nearest = spy
        first = search(api, **BODY)  # the sentence model is loading: the general path, kept in the cache
        assert spy.sentence_calls == [] and len(spy.calls) == 1
        assert search(api, **BODY)["results"] == first["results"] and len(spy.calls) == 1  # from the cache
        gate.set()
        _until(sentence.encoder)
        second = search(api, **BODY)  # not the cached response: searched again, on the sentence path
        assert spy.sentence_calls == [(GENERAL, ("mitre_attack",), True, True)]
        assert _ranked(second) == _ranked(first)
        search(api, **BODY)
        assert len(spy.sentence_calls) == 1  # kept under the new key
