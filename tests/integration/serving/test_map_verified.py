"""POST /v1/map with the verifier (search.yaml `map.verify`, `map.decision`): on the held path's store of its own
(tests/integration/serving/test_map_held.py), a verifier kept beside the sentence model scores every candidate,
its behaviour gate sets aside the sentence of hashes (counted in `set_aside`, supporting nothing), and the
report-level decision scores each technique from its sentences' verified probabilities."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from secrag.mapping.behaviour import SURFACE, BehaviourGate
from secrag.mapping.verifier import FEATURES, Verifier, write_verifier
from serving.api.app import create_app
from serving.mapping.decision import decide
from serving.mapping.held_path import held_evidence
from serving.mapping.sentences import split
from serving.mapping.verifier_file import folder_of
from serving.search.search_file import DECISION_FEATURES
from serving.settings import ServingSettings
from tests.integration.serving.test_map_held import (  # noqa: F401 - its fixture
    EXAMPLES_PER_TECHNIQUE,
    REPORT,
    SELECTOR,
    SENTENCE_MODEL,
    _mapped,
    _service,
    _serving,
    attack_db_url,
)

HASHES = (
    "IOCs seen: d41d8cd98f00b204e9800998ecf8427e and e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)
TEXT = f"{REPORT}\n{HASHES}\n"
# Every weight named: an operator's weights are laid over the shipped decision's, key by key.
DECISION = {
    "intercept": -1.0,
    "weights": {f: 0.0 for f in DECISION_FEATURES} | {"best": 3.0, "strong": 1.0, "prior": 0.5},
}
VERIFIED = SELECTOR + f"  verify: true\n  decision: {json.dumps(DECISION)}\n"


def _verifier(dims: int) -> Verifier:
    n = len(FEATURES)
    coef = np.zeros(n)
    coef[FEATURES.index("example_sim")] = 6.0
    coef[FEATURES.index("doc_top")] = 1.0
    gate = np.zeros(dims + len(SURFACE))
    gate[dims + SURFACE.index("hex")] = -10.0  # a sentence of hashes describes no behaviour
    return Verifier(SENTENCE_MODEL, FEATURES, np.zeros(n), np.ones(n), coef, -4.0, BehaviourGate(gate, 5.0, 0.5))


@pytest.fixture(scope="module")
def verified_app(
    attack_db_url: str,  # noqa: F811
    settings_for: Callable[..., ServingSettings],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, Verifier, Path]]:
    folder = tmp_path_factory.mktemp("verified")
    config = folder / "search.yaml"
    config.write_text(VERIFIED, encoding="utf-8")
    settings = settings_for(
        attack_db_url, sentence_model=SENTENCE_MODEL, search_source_vectors_mb=64, search_config=config
    )
    with TestClient(create_app(settings)) as client:
        _serving(client, SENTENCE_MODEL, ("mitre_attack", "mitre_attack_procedures"))
        verifier = _verifier(_service(client).sentence.encoder().dimensions)
        models = folder / "models"
        target = folder_of(SENTENCE_MODEL, models)
        target.mkdir(parents=True)
        write_verifier(target, verifier)
        yield client, verifier, models


def test_the_verifier_scores_the_votes_and_the_gate_sets_aside(
    verified_app: tuple[TestClient, Verifier, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, verifier, models = verified_app
    monkeypatch.setattr("serving.mapping.verifier_file.get_settings", lambda: SimpleNamespace(models_dir=models))
    answer = _mapped(client, TEXT, min_score=0)
    assert answer["set_aside"] == 1
    sentences = split(TEXT)
    found = held_evidence(_service(client).searcher, sentences, voters=10, top=3)
    assert found is not None
    expected: dict[tuple[str, str], float] = {}
    for sentence, cands in zip(sentences, found.candidates, strict=True):
        if HASHES in sentence.text:
            continue
        for c, p in zip(cands, verifier.scores(cands), strict=True):
            expected[(sentence.text, c.technique)] = float(p)
    votes: dict[str, list[float]] = {}
    for technique in answer["techniques"]:
        for s in technique["sentences"]:
            assert HASHES not in s["text"]  # the set-aside sentence supports nothing
            assert s["vote"] == pytest.approx(expected[(s["text"], technique["technique_id"])], abs=1e-5)
            votes.setdefault(technique["technique_id"], []).append(s["vote"])
    assert votes
    scores = {t["technique_id"]: t["score"] for t in answer["techniques"]}
    examples = _service(client).searcher.catalog.technique_examples()  # the store's procedure examples
    assert examples and max(examples.values()) <= EXAMPLES_PER_TECHNIQUE
    assert scores == pytest.approx(_decided(votes, len(sentences), examples), abs=1e-5)


def _decided(votes: dict[str, list[float]], sentences: int, examples: dict[str, int]) -> dict[str, float]:
    from serving.mapping.evidence import Evidence, Vote

    found = [
        Evidence(t, 0.0, tuple(Vote(i, t, p, 1, None) for i, p in enumerate(ps)))  # type: ignore[arg-type]
        for t, ps in votes.items()
    ]
    return {
        e.technique: e.score for e in decide(found, sentences, DECISION["intercept"], DECISION["weights"], examples)
    }


def test_without_its_file_the_selector_serves(
    verified_app: tuple[TestClient, Verifier, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    client, _, _ = verified_app
    monkeypatch.setattr("serving.mapping.verifier_file.get_settings", lambda: SimpleNamespace(models_dir=tmp_path))
    answer: dict[str, Any] = _mapped(client, TEXT, min_score=0)
    assert answer["set_aside"] == 0 and answer["techniques"]
