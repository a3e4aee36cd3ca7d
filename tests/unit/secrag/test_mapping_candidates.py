"""A text's sentences against ATT&CK's held vectors (secrag/mapping/candidates.py): the technique documents grouped by
technique, and each sentence's candidates with their evidence, on hand-made unit vectors."""

from __future__ import annotations

import numpy as np
import pytest

from secrag.mapping.candidates import Candidate, HeldAttack, candidates
from serving.search.source_vectors import Held


def _unit(*values: float) -> list[float]:
    vector = np.asarray(values, dtype=np.float64)
    return list(vector / np.linalg.norm(vector))


def _held(rows: list[tuple[str, list[float]]], labels: tuple[tuple[str, ...], ...] = ()) -> Held:
    """A source's vectors as the loader gives them: chunk ids in any order, one unit row each."""
    return Held(
        version="v1",
        chunk_ids=[chunk for chunk, _ in rows],
        doc_ids=[chunk.split("#")[0] for chunk, _ in rows],
        matrix=np.asarray([row for _, row in rows], dtype=np.float32),
        labels=labels,
    )


# Against the sentence [1, 0, 0, 0]: T1003.001's second chunk is its best (0.8), T1218.011's only one 0.6,
# T1059.001's 0; the group and the software documents would beat them all and are no techniques.
ATTACK = _held(
    [
        ("mitre_attack:T1218.011#0", _unit(0.6, 0, 0, 0.8)),
        ("mitre_attack:T1003.001#1", _unit(0.8, 0, 0.6, 0)),
        ("mitre_attack:G0007#0", _unit(1, 0, 0, 0)),
        ("mitre_attack:T1003.001#0", _unit(0.6, 0.8, 0, 0)),
        ("mitre_attack:S0002#0", _unit(1, 0.01, 0, 0)),
        ("mitre_attack:T1059.001#0", _unit(0, 1, 0, 0)),
    ]
)
# The procedure examples, in two held parts; against the sentence: 1.0, 0.8, 0.6, 0.0 and 0.7. T9999 has no
# technique document (revoked, or another domain's).
PROCEDURES = (
    _held(
        [("mitre_attack_procedures:p1", _unit(1, 0, 0, 0)), ("mitre_attack_procedures:p2", _unit(0.8, 0.6, 0, 0))],
        labels=(("T1003.001",), ("T1003.001",)),
    ),
    _held(
        [
            ("mitre_attack_procedures:p3", _unit(0.6, 0.8, 0, 0)),
            ("mitre_attack_procedures:p4", _unit(0, 0, 1, 0)),
            ("mitre_attack_procedures:p5", _unit(0.7, 0, 0, 0.71414284)),
        ],
        labels=(("T1059.001",), ("T1218.011",), ("T9999",)),
    ),
)
SENTENCE = np.asarray([[1, 0, 0, 0]], dtype=np.float32)


def _candidates(
    *, voters: int = 4, top: int = 1, named: frozenset[str] = frozenset(), found: frozenset[str] = frozenset()
) -> dict[str, Candidate]:
    [sentence] = candidates(
        SENTENCE, HeldAttack.of(PROCEDURES, [ATTACK]), voters=voters, top=top, named=[named], names_found=[found]
    )
    order = [(-c.share, -c.doc_sim, c.technique) for c in sentence]
    assert order == sorted(order)  # best share first, then document similarity
    return {c.technique: c for c in sentence}


def test_the_technique_documents_are_grouped_by_technique_and_nothing_else_is_kept() -> None:
    held = HeldAttack.of(PROCEDURES, [ATTACK])
    assert held.techniques == ["T1003.001", "T1059.001", "T1218.011"]
    assert held.chunks == [
        "mitre_attack:T1003.001#0",
        "mitre_attack:T1003.001#1",
        "mitre_attack:T1059.001#0",
        "mitre_attack:T1218.011#0",
    ]
    assert held.starts.tolist() == [0, 2, 3]
    rows = dict(zip(ATTACK.chunk_ids, ATTACK.matrix, strict=True))
    assert np.array_equal(held.documents, np.stack([rows[chunk] for chunk in held.chunks]))
    assert held.examples.shape == (5, 4)  # both parts, in order, each with its labels
    assert held.example_labels == [("T1003.001",), ("T1003.001",), ("T1059.001",), ("T1218.011",), ("T9999",)]
    assert np.array_equal(held.examples[2], PROCEDURES[1].matrix[0])


def test_held_attack_without_rows() -> None:
    empty = HeldAttack.of([], [])
    assert empty.techniques == [] and empty.chunks == [] and empty.documents.shape[0] == 0
    assert candidates(SENTENCE, empty, voters=4, top=3, named=[frozenset()], names_found=[frozenset()]) == [[]]
    held = HeldAttack.of(PROCEDURES, [ATTACK])
    assert candidates(np.zeros((0, 4), np.float32), held, voters=4, top=3, named=[], names_found=[]) == []


def test_the_nearest_examples_share_their_similarity_among_their_techniques() -> None:
    found = _candidates(top=3)
    total = 1.0 + 0.8 + 0.7 + 0.6  # the four nearest examples: p1, p2, p5, p3
    assert set(found) == {"T1003.001", "T1059.001", "T1218.011"}  # T9999 votes but has no document
    assert found["T1003.001"].share == pytest.approx(1.8 / total, abs=1e-5)
    assert found["T1059.001"].share == pytest.approx(0.6 / total, abs=1e-5)
    assert found["T1218.011"].share == 0.0  # its example is not among the nearest
    assert sum(c.share for c in found.values()) == pytest.approx(1 - 0.7 / total, abs=1e-5)  # T9999's is the rest
    assert (found["T1003.001"].vote_rank, found["T1059.001"].vote_rank, found["T1218.011"].vote_rank) == (1, 3, 0)
    assert found["T1003.001"].share_margin == pytest.approx((1.8 - 0.7) / total, abs=1e-5)
    assert found["T1059.001"].share_margin == pytest.approx((0.6 - 1.8) / total, abs=1e-5)
    assert found["T1003.001"].example_sim == pytest.approx(1.0) and found["T1059.001"].example_sim == pytest.approx(0.6)
    assert found["T1218.011"].example_sim == 0.0
    assert all(c.near_sim == pytest.approx(total / 4, abs=1e-5) for c in found.values())  # the sentence's


def test_the_documents_rank_by_their_best_chunk_which_is_cited() -> None:
    found = _candidates(top=3)
    lsass, rundll32, powershell = found["T1003.001"], found["T1218.011"], found["T1059.001"]
    assert (lsass.doc_sim, rundll32.doc_sim, powershell.doc_sim) == pytest.approx((0.8, 0.6, 0.0), abs=1e-5)
    assert (lsass.doc_rank, rundll32.doc_rank, powershell.doc_rank) == (1, 2, 3)
    assert (lsass.doc_margin, rundll32.doc_margin) == (0.0, pytest.approx(-0.2, abs=1e-5))
    assert lsass.chunk_id == "mitre_attack:T1003.001#1"  # its second chunk is nearer than its first
    assert rundll32.chunk_id == "mitre_attack:T1218.011#0"


def test_top_takes_the_best_by_vote_and_by_document_and_every_named_technique() -> None:
    assert list(_candidates(top=1)) == ["T1003.001"]  # first by vote and by document
    found = _candidates(top=1, named=frozenset({"T1218.011"}), found=frozenset({"T1003.001"}))
    assert list(found) == ["T1003.001", "T1218.011"]
    assert found["T1218.011"].named and found["T1218.011"].vote_rank == 0  # named, without a vote
    assert not found["T1003.001"].named and found["T1003.001"].name_found
    assert not found["T1218.011"].name_found
    assert "T9999" not in _candidates(top=3, named=frozenset({"T9999"}))  # named, but no document to cite


def test_fewer_examples_than_voters_all_vote() -> None:
    found = _candidates(voters=50, top=3)
    total = 1.0 + 0.8 + 0.6 + 0.0 + 0.7
    assert found["T1218.011"].vote_rank == 4 and found["T1218.011"].share == 0.0  # a vote of similarity 0
    assert found["T1003.001"].share == pytest.approx(1.8 / total, abs=1e-5)
    assert found["T1003.001"].near_sim == pytest.approx(total / 5, abs=1e-5)


def test_each_sentence_has_its_own_candidates_in_order() -> None:
    queries = np.asarray([[1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32)
    held = HeldAttack.of(PROCEDURES, [ATTACK])
    first, second = candidates(
        queries, held, voters=2, top=2, named=[frozenset(), frozenset()], names_found=[frozenset(), frozenset()]
    )
    assert [c.technique for c in first] == ["T1003.001", "T1218.011"]  # p1 and p2 vote; the two nearest documents
    # the second sentence's nearest examples are p3 (0.8) and p2 (0.6); its nearest documents T1059.001's and
    # T1003.001's first chunk
    assert [c.technique for c in second] == ["T1059.001", "T1003.001"]
    assert second[0].share == pytest.approx(0.8 / 1.4, abs=1e-5) and second[0].doc_rank == 1
    assert second[1].chunk_id == "mitre_attack:T1003.001#0"


def test_excluded_examples_do_not_vote() -> None:
    """A training example's own actor's examples are left out: here p1 and p2, so T1003.001 has no vote."""
    held = HeldAttack.of(PROCEDURES, [ATTACK])
    [sentence] = candidates(
        SENTENCE,
        held,
        voters=3,
        top=3,
        named=[frozenset()],
        names_found=[frozenset()],
        exclude=[np.asarray([0, 1], dtype=np.intp)],
    )
    found = {c.technique: c for c in sentence}
    assert found["T1003.001"].share == 0.0 and found["T1003.001"].example_sim == 0.0
    assert found["T1059.001"].example_sim == pytest.approx(0.6)
    total = 0.7 + 0.6 + 0.0  # p5, p3, p4 are the three nearest left
    assert found["T1059.001"].share == pytest.approx(0.6 / total, abs=1e-5)
    assert found["T1059.001"].example_margin == pytest.approx(0.6 - 0.7, abs=1e-5)  # T9999's example is nearer


def test_family_and_parent_margins() -> None:
    """A sub-technique against its parent and siblings: T1003.001 (0.8) beside T1003 (0.5) and T1003.002 (0.9)."""
    attack = _held(
        [
            ("mitre_attack:T1003#0", _unit(0.5, 0.8660254, 0, 0)),
            ("mitre_attack:T1003.001#0", _unit(0.8, 0.6, 0, 0)),
            ("mitre_attack:T1003.002#0", _unit(0.9, 0, 0.43588989, 0)),
            ("mitre_attack:T1059.001#0", _unit(0, 1, 0, 0)),
        ]
    )
    held = HeldAttack.of(PROCEDURES, [attack])
    [sentence] = candidates(SENTENCE, held, voters=2, top=4, named=[frozenset()], names_found=[frozenset()])
    found = {c.technique: c for c in sentence}
    assert found["T1003.001"].family_margin == pytest.approx(0.8 - 0.9, abs=1e-5)
    assert found["T1003.001"].parent_margin == pytest.approx(0.8 - 0.5, abs=1e-5)
    assert found["T1003"].parent_margin == pytest.approx(0.5 - 0.9, abs=1e-5)  # a parent against its best child
    assert found["T1059.001"].family_margin == 0.0 and found["T1059.001"].parent_margin == 0.0  # alone
