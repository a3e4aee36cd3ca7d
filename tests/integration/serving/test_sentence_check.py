"""/v1/search's sentence path checked by the verifier (serving/mapping/sentence_check.py, serving/search/
verified_ranking.py): on the held path's store of its own with a verifier beside the sentence model, a report
sentence's technique documents score the noisy-or of their fused score and the verifier's probability (the map's
candidates and verifier for that sentence) at search.yaml's `class_weights.sentence.verified`; without the
verifier's file the ranking is the plain one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from secrag.mapping.verifier import Verifier
from serving.mapping.held_path import held_evidence
from serving.mapping.sentence_check import SentenceCheck
from serving.mapping.sentences import Sentence
from tests.integration.serving.test_map_held import SENTENCE_MODEL, SENTENCES, _service, attack_db_url  # noqa: F401
from tests.integration.serving.test_map_verified import verified_app  # noqa: F401 - its fixture

QUERY = SENTENCES["lsass"]
BODY = {"query": QUERY, "mode": "hybrid", "k": 10, "filters": {"sources": ["mitre_attack"]}}


def _scores(client: TestClient) -> dict[str, float]:
    response = client.post("/v1/search", json=BODY)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    assert answer["query_type"] == "sentence"
    return {r["doc_id"]: r["score"] for r in answer["results"]}


def _models(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setattr("serving.mapping.verifier_file.get_settings", lambda: SimpleNamespace(models_dir=folder))


def test_a_report_sentences_techniques_rise_by_their_verified_probability(
    verified_app: tuple[TestClient, Verifier, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    client, verifier, models = verified_app
    service = _service(client)
    _models(monkeypatch, tmp_path)  # no verifier: the plain ranking
    plain = _scores(client)
    _models(monkeypatch, models)
    checked = _scores(client)
    found = held_evidence(service.searcher, [Sentence(0, len(QUERY), QUERY)], voters=10, top=3)
    assert found is not None
    (cands,) = found.candidates
    expected = {f"mitre_attack:{c.technique}": float(p) for c, p in zip(cands, verifier.scores(cands), strict=True)}
    with service.pool.connection() as conn:
        check = SentenceCheck(service.source_vectors, service.catalog, service.search_config)
        assert check(conn, SENTENCE_MODEL, np.asarray(found.vectors[0]), QUERY) == pytest.approx(expected, abs=1e-6)
    weight = service.search_config.weights("sentence").verified
    assert weight and any(p > 0.01 for d, p in expected.items() if d in plain)
    for doc_id, score in plain.items():
        if doc_id in checked:
            verified = 1 - (1 - score) * (1 - weight * expected.get(doc_id, 0.0))
            assert checked[doc_id] == pytest.approx(verified, abs=1e-5)
    assert list(checked) == sorted(checked, key=lambda d: -checked[d]) and max(checked.values()) <= 1.0


def test_the_result_caches_key_names_the_verifier(
    verified_app: tuple[TestClient, Verifier, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A verifier written beside a sentence model already serving changes a sentence's answer, so the result
    cache's key changes with it (its file's change time)."""
    client, _, models = verified_app
    searcher = _service(client).searcher
    assert searcher.check is not None
    _models(monkeypatch, tmp_path)  # no verifier file
    assert searcher.check.version(SENTENCE_MODEL) == ""
    without = searcher._models()
    _models(monkeypatch, models)
    assert searcher.check.version(SENTENCE_MODEL)
    assert searcher._models() != without and searcher._models().startswith(without)
