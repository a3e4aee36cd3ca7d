"""A technique's evidence across sentences (serving/mapping/evidence.py): which hits vote, and noisy-or."""

from __future__ import annotations

import pytest

from serving.contract.responses import LegScores, SearchResult
from serving.mapping.evidence import combine, named_techniques, noisy_or, technique_of, votes_of

PRECISION = (0.35, 0.13, 0.09)


def hit(doc_id: str, score: float, source: str = "mitre_attack") -> SearchResult:
    return SearchResult(
        doc_id=doc_id,
        chunk_id=f"{doc_id}#0",
        source=source,
        title=doc_id,
        url=None,
        score=score,
        exact=False,
        scores=LegScores(),
        techniques=[],
        platforms=[],
    )


def test_only_technique_documents_of_attack_vote() -> None:
    assert technique_of(hit("mitre_attack:T1003.001", 0.5)) == "T1003.001"
    assert technique_of(hit("mitre_attack:T1059", 0.5)) == "T1059"
    assert technique_of(hit("mitre_attack:G0007", 0.5)) is None  # a group
    assert technique_of(hit("mitre_attack:S0002", 0.5)) is None  # software
    assert technique_of(hit("acme_notes:T1003", 0.5, source="acme_notes")) is None


def test_a_sentence_votes_for_its_first_techniques_by_rank() -> None:
    hits = [
        hit("mitre_attack:G0007", 0.95),  # a group: no vote, no rank
        hit("mitre_attack:T1003.001", 0.9),
        hit("mitre_attack:T1003", 0.8),
        hit("mitre_attack:T1003.001", 0.78),  # another chunk of a technique already counted
        hit("mitre_attack:S0002", 0.75),
        hit("mitre_attack:T1055", 0.7),
        hit("mitre_attack:T1087", 0.6),  # past the ranks that vote
    ]
    votes = votes_of(4, hits, PRECISION)
    assert [(v.sentence, v.technique, v.vote, v.rank, v.hit.score) for v in votes] == [
        (4, "T1003.001", 0.35, 1, 0.9),
        (4, "T1003", 0.13, 2, 0.8),
        (4, "T1055", 0.09, 3, 0.7),
    ]


def test_a_sentence_naming_the_id_votes_one() -> None:
    named = named_techniques("It ran PowerShell (T1059.001), cf. T1105; not T10599, XT1003 or T1003.0011.")
    assert named == {"T1059.001", "T1105"}
    hits = [hit("mitre_attack:T1059", 0.9), hit("mitre_attack:T1059.001", 0.8), hit("mitre_attack:T1105", 0.7)]
    votes = votes_of(0, hits, PRECISION, named)
    assert [(v.technique, v.vote) for v in votes] == [("T1059", 0.35), ("T1059.001", 1.0), ("T1105", 1.0)]


def test_noisy_or_combines_sentences_and_counts_a_sentence_once() -> None:
    votes = [
        *votes_of(0, [hit("mitre_attack:T1003.001", 0.6), hit("mitre_attack:T1059", 0.3)], PRECISION),
        *votes_of(1, [hit("mitre_attack:T1003.001", 0.6)], PRECISION),
        *votes_of(2, [hit("mitre_attack:T1059", 0.5)], PRECISION),
    ]
    found = combine(reversed(votes))  # the order of the votes does not matter
    assert [(e.technique, e.score) for e in found] == [("T1003.001", 0.5775), ("T1059", 0.4345)]
    assert [v.sentence for v in found[0].votes] == [0, 1]
    assert combine(votes + votes) == found  # a sentence's vote counts once


def test_ties_are_broken_by_id() -> None:
    votes = [
        *votes_of(0, [hit("mitre_attack:T1087", 0.5)], PRECISION),
        *votes_of(1, [hit("mitre_attack:T1055", 0.4)], PRECISION),
    ]
    assert [e.technique for e in combine(votes)] == ["T1055", "T1087"]


@pytest.mark.parametrize(("scores", "expected"), [([], 0.0), ([1.0, 0.2], 1.0), ([0.5], 0.5), ([0.5, 0.5], 0.75)])
def test_noisy_or(scores: list[float], expected: float) -> None:
    assert noisy_or(scores) == pytest.approx(expected)
