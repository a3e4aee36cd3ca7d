"""The map's report-level decision (serving/mapping/decision.py): a technique's evidence across a text as the
features search.yaml's `map.decision` weighs, and the probability it gives."""

from __future__ import annotations

import math

import pytest

from serving.contract.responses import LegScores, SearchResult
from serving.mapping.decision import decide, features
from serving.mapping.evidence import Evidence, Vote
from serving.search.search_file import DECISION_FEATURES


def _vote(sentence: int, technique: str, p: float) -> Vote:
    hit = SearchResult(
        doc_id=f"mitre_attack:{technique}",
        chunk_id=f"mitre_attack:{technique}#0",
        source="mitre_attack",
        title=technique,
        score=p,
        exact=False,
        scores=LegScores(),
        url=None,
        techniques=[technique],
        platforms=[],
    )
    return Vote(sentence, technique, p, 1, hit)


FOUND = [
    Evidence("T1003.001", 0.0, (_vote(0, "T1003.001", 0.9), _vote(2, "T1003.001", 0.6), _vote(5, "T1003.001", 0.2))),
    Evidence("T1003", 0.0, (_vote(0, "T1003", 0.3),)),
    Evidence("T1003.002", 0.0, (_vote(1, "T1003.002", 0.7),)),
    Evidence("T1059", 0.0, (_vote(3, "T1059", 1.0),)),
]


def test_the_features_are_the_ones_the_search_file_accepts() -> None:
    values = features({e.technique: [v.vote for v in e.votes] for e in FOUND}, sentences=20)
    assert all(tuple(v) == DECISION_FEATURES for v in values.values())
    lsass = values["T1003.001"]
    assert (lsass["best"], lsass["second"]) == (0.9, 0.6)
    assert lsass["strong"] == pytest.approx(math.log1p(2))  # two sentences at 0.5 or more
    assert lsass["mass"] == pytest.approx(math.log1p(1.7))
    assert lsass["family_gap"] == pytest.approx(0.9 - 0.7)  # its sibling T1003.002 (and parent T1003: 0.3)
    assert lsass["parent_gap"] == pytest.approx(0.9 - 0.3)
    assert values["T1003"]["parent_gap"] == pytest.approx(0.3 - 0.9)  # a parent against its best child
    assert values["T1059"]["family_gap"] == 1.0 and values["T1059"]["second"] == 0.0
    assert lsass["length"] == pytest.approx(math.log1p(20) / 10)


def test_decide_rescores_and_orders() -> None:
    decided = decide(FOUND, 20, -2.0, {"best": 4.0, "family_gap": 1.0})
    assert [e.technique for e in decided] == ["T1059", "T1003.001", "T1003.002", "T1003"]
    # a sentence writes T1059's id: evidence at 1, weighed as the rest rather than a score of 1
    assert decided[0].score == pytest.approx(1 / (1 + math.exp(-(-2.0 + 4.0 + 1.0))), abs=1e-6)
    assert decided[1].score == pytest.approx(1 / (1 + math.exp(-(-2.0 + 3.6 + 0.2))), abs=1e-6)
    assert decided[1].votes == FOUND[0].votes  # the evidence is kept as it was


def test_the_prior_is_the_store_s_procedure_examples() -> None:
    examples = {"T1003": 10, "T1003.001": 40, "T1003.002": 5, "T1105": 500}
    values = features({e.technique: [v.vote for v in e.votes] for e in FOUND}, sentences=20, examples=examples)
    assert values["T1003.001"]["prior"] == pytest.approx(math.log1p(40))
    assert values["T1003.001"]["family_prior"] == pytest.approx(math.log1p(55))  # the parent and every sibling
    assert values["T1003"]["family_prior"] == values["T1003.002"]["family_prior"]
    assert values["T1059"]["prior"] == 0.0 and values["T1059"]["family_prior"] == 0.0  # no example in the store
    common = decide(FOUND[:3], 20, -2.0, {"best": 4.0, "prior": 1.0}, examples)
    plain = decide(FOUND[:3], 20, -2.0, {"best": 4.0, "prior": 1.0})
    assert {e.technique: e.score for e in common}["T1003.001"] > {e.technique: e.score for e in plain}["T1003.001"]
    assert [e.technique for e in common] == ["T1003.001", "T1003.002", "T1003"]
