"""POST /v1/map's held path (serving/mapping/held_path.py, secrag/mapping/candidates.py, selector.py; mapper.py
chooses it) against real stores and the real model. With search.yaml's map.selector set and a sentence model
serving, a text's sentences are encoded by the sentence model and take their candidates from its vectors of ATT&CK
held in memory; without the procedure examples, or without a sentence model, the map searches each sentence as
before.

The serving corpus has no procedure examples, so the held path is also tested on a store of its own: a few ATT&CK
technique families and their procedure examples, embedded with the general model and its int8 model, which serves
as the sentence model here (a model of its own id, as a trained one would be)."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from threadpoolctl import threadpool_info

from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.sources.mitre_lookup import techniques_from_bundle
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry
from pipeline.store import SourceRow, Store
from secrag.db import database
from secrag.files.package_data import sql_dir
from secrag.mapping.candidates import candidates
from serving.api.app import create_app
from serving.mapping import held_path
from serving.mapping.held_path import held_evidence
from serving.mapping.sentences import split
from serving.search.encoder import QueryEncoder, shared_encoder
from serving.search.search_file import load_search_config
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy
from tests.plugins.upstream import SNAPSHOT

GENERAL = "all-MiniLM-L6-v2"  # the serving model of both stores
SENTENCE_MODEL = "all-MiniLM-L6-v2-int8"  # the sentence model of the store of its own
SQL_DIR = sql_dir()
SELECTOR = """\
map:
  selector:
    voters: 10
    top: 3
    intercept: -3.0
    weights: {share: 5.0, doc_top: 2.0, doc_sim: 2.0}
"""
FLOOR = load_search_config().map.selector.floor  # the shipped floor, under the overlay above
SENTENCES = {
    "lsass": "The attackers dumped credentials from LSASS memory with Mimikatz on the domain controller.",
    "rundll32": "They used rundll32.exe to proxy execution of a malicious DLL, e.g. a fake update.",
    "named": "Later the operators ran batch scripts through the Windows command shell (T1059.003) on each host.",
}
REPORT = f"Intrusion summary\n\n{SENTENCES['lsass']} {SENTENCES['rundll32']}\n\n- {SENTENCES['named']}\n"
RANK_PRECISION = {0.35, 0.13, 0.10, 1.0}  # the search path's votes (search.yaml map.rank_precision; 1: named)
# The store of its own: these technique families, one group (not a technique: it never votes) and at most this
# many procedure examples of each technique.
FAMILIES = ("T1003", "T1059", "T1218")
GROUP = "G0007"
EXAMPLES_PER_TECHNIQUE = 6


def _service(client: TestClient) -> Any:  # noqa: ANN401
    return client.app.state.service  # type: ignore[attr-defined]


def _mapped(client: TestClient, text: str = REPORT, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    response = client.post("/v1/map", json={"text": text, **body})
    assert response.status_code == 200, response.text
    answer = response.json()
    answer.pop("took_ms")
    return answer


def _serving(client: TestClient, model_id: str, sources: tuple[str, ...]) -> None:
    """The sentence model loaded and its vectors of `sources` held (both load in the background otherwise)."""
    service = _service(client)
    sentence = service.sentence
    assert sentence is not None
    for _ in range(1200):  # bounded: a model that never loads fails the test
        encoder = sentence.encoder()
        if encoder is not None:
            break
        time.sleep(0.05)
    assert isinstance(encoder, QueryEncoder) and encoder.model_id == model_id
    for source in sources:
        assert service.source_vectors.load(model_id, source, encoder.dimensions), source


@pytest.fixture(scope="module")
def selector_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An operator's search.yaml turning the held path on (laid over the shipped one)."""
    path = tmp_path_factory.mktemp("map_held") / "search.yaml"
    path.write_text(SELECTOR + "  decision: null\n", encoding="utf-8")  # the votes as noisy-or combines them
    return path


# The serving corpus: ATT&CK's technique documents, no procedure examples.


@pytest.fixture(scope="module")
def corpus_apps(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], selector_file: Path
) -> Iterator[dict[str, TestClient]]:
    """The API over the serving corpus with the sentence path on (the general model pinned as its model), with
    the selector and without."""
    made = {
        "selector": settings_for(
            serving_db_url, sentence_model=GENERAL, search_source_vectors_mb=64, search_config=selector_file
        ),
        "plain": settings_for(serving_db_url, sentence_model=GENERAL, search_source_vectors_mb=64),
    }
    clients = {name: TestClient(create_app(settings)) for name, settings in made.items()}
    for c in clients.values():
        c.__enter__()
        _serving(c, GENERAL, ("mitre_attack",))
    yield clients
    for c in clients.values():
        c.__exit__(None, None, None)


def test_without_procedure_examples_there_are_no_held_candidates(corpus_apps: dict[str, TestClient]) -> None:
    service = _service(corpus_apps["selector"])
    with service.pool.connection() as conn:
        assert "mitre_attack_procedures" not in service.catalog.source_versions(conn)
    assert held_evidence(service.searcher, split(REPORT), voters=10, top=3) is None


def test_without_procedure_examples_the_map_searches_each_sentence(corpus_apps: dict[str, TestClient]) -> None:
    held_on, plain = _mapped(corpus_apps["selector"]), _mapped(corpus_apps["plain"])
    assert held_on == plain  # the selector changes nothing: every sentence searched, voting by rank
    assert held_on["model"] == GENERAL and held_on["techniques"]
    votes = {s["vote"] for t in held_on["techniques"] for s in t["sentences"]}
    assert votes <= RANK_PRECISION


# A store of its own: ATT&CK's technique documents and their procedure examples.


def _records(source: str) -> list[Record]:
    registry = default_registry()
    return list(parse_source(registry[source], SNAPSHOT / "mitre_attack", version="test").records)


def _attack_store(conn: psycopg.Connection) -> dict[str, int]:
    """Publish the families' technique documents, the group and their procedure examples; embed them with the
    general model and with the sentence model."""
    store = Store(SQL_DIR)
    registry = default_registry()
    store.replace_techniques(
        conn, techniques_from_bundle(SNAPSHOT / "mitre_attack" / registry["mitre_attack"].paths[0]), "test"
    )
    lookup = store.technique_names(conn)
    attack = [r for r in _records("mitre_attack") if r.upstream_id.split(".")[0] in FAMILIES or r.upstream_id == GROUP]
    techniques = {r.upstream_id for r in attack if r.upstream_id != GROUP}
    per_technique: dict[str, list[Record]] = defaultdict(list)
    for record in sorted(_records("mitre_attack_procedures"), key=lambda r: r.upstream_id):
        [technique] = record.techniques
        if technique in techniques and len(per_technique[technique]) < EXAMPLES_PER_TECHNIQUE:
            per_technique[technique].append(record)
    procedures = [r for records in per_technique.values() for r in records]
    for source, records in (("mitre_attack", attack), ("mitre_attack_procedures", procedures)):
        spec = registry[source]
        store.register_source(
            conn,
            SourceRow(name=source, kind="online", description=spec.description, category=spec.category),
        )
        store.publish(conn, source=source, version="test-v1", records=records, lookup=lookup, chunking=ChunkConfig())
    for model in (GENERAL, SENTENCE_MODEL):
        embed_pending(conn, shared_encoder(model).embedder, SQL_DIR, batch_size=64)
    conn.execute("ANALYZE")
    return {"mitre_attack": len(attack), "mitre_attack_procedures": len(procedures)}


@pytest.fixture(scope="module")
def attack_db_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    with migrated_copy(pg_server_url, template_db, f"secrag_map_held_{os.getpid()}") as url:
        with database.connect(url, autocommit=True) as conn:
            counts = _attack_store(conn)
        assert counts["mitre_attack"] > 20 and counts["mitre_attack_procedures"] > 50, counts
        yield url


@pytest.fixture(scope="module")
def attack_apps(
    attack_db_url: str, settings_for: Callable[..., ServingSettings], selector_file: Path
) -> Iterator[dict[str, TestClient]]:
    """The API over that store with the selector: the sentence model serving, and the sentence path off."""
    made = {
        "held": settings_for(
            attack_db_url, sentence_model=SENTENCE_MODEL, search_source_vectors_mb=64, search_config=selector_file
        ),
        "off": settings_for(
            attack_db_url, sentence_model="none", search_source_vectors_mb=64, search_config=selector_file
        ),
    }
    clients = {name: TestClient(create_app(settings)) for name, settings in made.items()}
    for c in clients.values():
        c.__enter__()
    _serving(clients["held"], SENTENCE_MODEL, ("mitre_attack", "mitre_attack_procedures"))
    yield clients
    for c in clients.values():
        c.__exit__(None, None, None)


def _by_id(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["technique_id"]: t for t in answer["techniques"]}


def test_the_map_answers_from_the_sentence_models_held_vectors(attack_apps: dict[str, TestClient]) -> None:
    answer = _mapped(attack_apps["held"])
    assert answer["model"] == SENTENCE_MODEL and answer["layer"] is not None
    found = _by_id(answer)
    assert "T1003.001" in found, list(found)
    assert [s["text"] for s in found["T1003.001"]["sentences"]] == [SENTENCES["lsass"]]
    assert "T1218.011" in found, list(found)
    assert SENTENCES["rundll32"] in [s["text"] for s in found["T1218.011"]["sentences"]]
    named = [s for s in found["T1059.003"]["sentences"] if s["text"] == SENTENCES["named"]]
    assert [s["vote"] for s in named] == [1.0]  # a sentence writing the id is certain of it
    for technique in answer["techniques"]:
        for s in technique["sentences"]:  # each vote is the selector's probability, at or over its floor
            assert FLOOR <= s["vote"] <= 1.0 and s["search_score"] == pytest.approx(s["vote"], abs=1e-6)
            assert REPORT[s["start"] : s["end"]] == s["text"]
        [citation] = technique["citations"]  # a chunk of the technique's own document, never the group's
        assert (
            citation["doc_id"] == f"mitre_attack:{technique['technique_id']}" and citation["source"] == "mitre_attack"
        )
        assert citation["passages"] and all(
            p["chunk_id"].startswith(citation["doc_id"] + "#") for p in citation["passages"]
        )
    assert _mapped(attack_apps["held"]) == answer  # the same text maps the same


def test_the_votes_are_the_held_candidates(attack_apps: dict[str, TestClient]) -> None:
    """Every technique a sentence votes for is one of its candidates from the held vectors."""
    searcher = _service(attack_apps["held"]).searcher
    sentences = split(REPORT)
    held = held_evidence(searcher, sentences, voters=10, top=3)
    assert held is not None and len(held.candidates) == len(sentences)
    found = held.candidates
    assert all(c.chunk_id.startswith(f"mitre_attack:{c.technique}#") for cs in found for c in cs)
    candidates = {(sentences[i].text, c.technique) for i, cs in enumerate(found) for c in cs}
    answer = _mapped(attack_apps["held"], min_score=0)
    voted = {(s["text"], t["technique_id"]) for t in answer["techniques"] for s in t["sentences"]}
    assert voted and voted <= candidates


def test_the_held_candidates_use_one_blas_thread(
    attack_apps: dict[str, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A map's products over the held vectors run on one BLAS thread, as a search's do: more threads only contend
    with the other requests for the cores."""
    seen: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - candidates' own signature
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return candidates(*args, **kwargs)

    monkeypatch.setattr(held_path, "candidates", counting)
    assert held_evidence(_service(attack_apps["held"]).searcher, split(REPORT), voters=10, top=3) is not None
    assert seen and set(seen) == {1}


def test_without_a_sentence_model_the_map_searches_each_sentence(attack_apps: dict[str, TestClient]) -> None:
    assert _service(attack_apps["off"]).sentence.encoder() is None
    assert held_evidence(_service(attack_apps["off"]).searcher, split(REPORT), voters=10, top=3) is None
    answer = _mapped(attack_apps["off"])
    assert answer["model"] == GENERAL
    found = _by_id(answer)
    assert found and all(t.split(".")[0] in {"T1003", "T1059", "T1218"} for t in found)  # the report's families
    assert 0.35 in {s["vote"] for t in answer["techniques"] for s in t["sentences"]}  # voting by rank
    assert {s["vote"] for t in answer["techniques"] for s in t["sentences"]} <= RANK_PRECISION
