"""The validation figures on hand-made rankings and vectors: nDCG@10 (the technique graded 2, its parent 1), P@1,
recall@10, the vote of the nearest training examples, and score() over all three rankings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.training.examples import Example, LabelledData, Technique
from pipeline.training.validation import Figures, K, figures, grades, ranked, score, validate, vote_scores

LOG3 = math.log2(3)


def test_a_technique_is_graded_2_and_its_parent_1() -> None:
    assert grades("T1059.001") == {"T1059.001": 2, "T1059": 1}
    assert grades("T1059") == {"T1059": 2}


@pytest.mark.parametrize(
    ("ranking", "label", "expected"),
    [
        (["T1059.001", "T1059"], "T1059.001", Figures(1.0, 1.0, 1.0)),  # the ideal ranking
        (["T1059"], "T1059", Figures(1.0, 1.0, 1.0)),
        # parent first: a graded hit at 1 (P@1 counts it), the technique itself at 2
        (["T1059", "T1059.001"], "T1059.001", Figures(round((1 + 3 / LOG3) / (3 + 1 / LOG3), 4), 1.0, 1.0)),
        # only the parent: no recall (recall is of the technique itself)
        (["T1105", "T1059"], "T1059.001", Figures(round((1 / LOG3) / (3 + 1 / LOG3), 4), 0.0, 0.0)),
        (["T1105", "T1059.001"], "T1059.001", Figures(round((3 / LOG3) / (3 + 1 / LOG3), 4), 0.0, 1.0)),
        (["T1105", "T1059.001"], "T1059", Figures(0.0, 0.0, 0.0)),  # a child is no hit for its parent
        ([], "T1059", Figures(0.0, 0.0, 0.0)),
    ],
)
def test_figures_of_one_ranking(ranking: list[str], label: str, expected: Figures) -> None:
    assert figures([ranking], [label]) == expected


def test_only_the_first_ten_count() -> None:
    others = [f"T{1100 + i}" for i in range(20)]
    tenth = [*others[: K - 1], "T1059"]
    eleventh = [*others[:K], "T1059"]
    assert figures([tenth], ["T1059"]) == Figures(round(3 / math.log2(K + 1) / 3, 4), 0.0, 1.0)
    assert figures([eleventh], ["T1059"]) == Figures(0.0, 0.0, 0.0)


def test_figures_are_means_over_the_examples_rounded_to_four_places() -> None:
    got = figures([["T1059"], ["T1105", "T1059"], []], ["T1059", "T1059", "T1059"])
    assert got == Figures(round((1 + 1 / LOG3) / 3, 4), round(1 / 3, 4), round(2 / 3, 4))
    assert got.as_dict("vote") == {"vote_ndcg10": got.ndcg10, "vote_p1": got.p1, "vote_recall10": got.recall10}
    assert figures([], []) == Figures(0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        figures([["T1059"]], [])  # a ranking without its label


def test_the_vote_sums_the_similarities_of_the_nearest_examples() -> None:
    sims = np.array([[0.9, 0.8, 0.1, 0.7], [0.2, 0.3, 0.4, 0.5]], dtype=np.float32)
    labels = ["T1059", "T1105", "T1059", "T1059"]
    assert vote_scores(sims, labels, 2) == [
        pytest.approx({"T1059": 0.9, "T1105": 0.8}),
        pytest.approx({"T1059": 0.9}),  # 0.5 + 0.4: both nearest are T1059's
    ]
    assert vote_scores(sims, labels, 3) == [
        pytest.approx({"T1059": 1.6, "T1105": 0.8}),
        pytest.approx({"T1059": 0.9, "T1105": 0.3}),
    ]
    assert vote_scores(sims, labels, 10) == [  # more voters than examples: every example votes
        pytest.approx({"T1059": 1.7, "T1105": 0.8}),
        pytest.approx({"T1059": 1.1, "T1105": 0.3}),
    ]


def test_equal_similarities_vote_in_the_examples_order() -> None:
    sims = np.array([[0.5, 0.5, 0.5]], dtype=np.float32)
    assert vote_scores(sims, ["T1", "T2", "T3"], 2) == [{"T1": 0.5, "T2": 0.5}]


def test_a_ranking_is_by_score_then_id_and_ten_long() -> None:
    assert ranked({"T2": 0.5, "T1": 0.5, "T3": 0.9}) == ["T3", "T1", "T2"]
    assert ranked({f"T{i:02d}": float(i) for i in range(30)}) == [f"T{i:02d}" for i in range(29, 19, -1)]


def _example(doc_id: str, technique: str, actor: str) -> Example:
    return Example(doc_id, f"text of {doc_id}", technique, actor, f"chunk of {doc_id}")


# Three techniques, one training example each, two validation examples: a tiny space of unit vectors.
DATA = LabelledData(
    train=(_example("p:a", "T1", "G1"), _example("p:b", "T2", "G1"), _example("p:c", "T3", "G2")),
    validation=(_example("p:q1", "T1", "G3"), _example("p:q2", "T2", "G3")),
    techniques=(
        Technique("t:1", "T1", "T1 text", "chunk of t:1"),
        Technique("t:2", "T2", "T2 text", "chunk of t:2"),
        Technique("t:3", "T3", "T3 text", "chunk of t:3"),
    ),
    versions={},
)
E1, E2, E3 = np.eye(3, dtype=np.float32)
VECTORS = {
    "text of p:q1": E1,  # on T1's example and document
    "text of p:q2": np.array([0.8, 0.6, 0.0], dtype=np.float32),  # nearer T1's example, nearer T2's document
    "chunk of p:a": E1,
    "chunk of p:b": E2,
    "chunk of p:c": E3,
    "chunk of t:1": E1,
    "chunk of t:2": np.array([0.6, 0.8, 0.0], dtype=np.float32),
    "chunk of t:3": E3,
}
# q1 is right in all three rankings; q2 is second after T1 in the vote, first among the documents, and second in
# both: T1 4 * 0.8 / 3 + 0.8 = 1.867 beats T2 4 * 0.6 / 3 + 0.96 = 1.76.
HALF = {"ndcg10": round((1 + (3 / LOG3) / 3) / 2, 4), "p1": 0.5, "recall10": 1.0}
EXPECTED = {
    **{f"vote_{k}": v for k, v in HALF.items()},
    **{f"documents_{k}": 1.0 for k in ("ndcg10", "p1", "recall10")},
    **{f"both_{k}": v for k, v in HALF.items()},
    "examples": 2,
}


def _rows(keys: list[str]) -> np.ndarray:
    return np.stack([VECTORS[k] for k in keys])


def test_score_of_tiny_unit_vectors() -> None:
    queries = _rows([e.text for e in DATA.validation])
    voters = _rows([e.chunk for e in DATA.train])
    techniques = _rows([t.chunk for t in DATA.techniques])
    assert score(queries, voters, techniques, DATA, voters=3) == pytest.approx(EXPECTED)


def test_one_voter_leaves_only_the_nearest_examples_technique() -> None:
    queries = _rows([e.text for e in DATA.validation])
    got = score(
        queries, _rows([e.chunk for e in DATA.train]), _rows([t.chunk for t in DATA.techniques]), DATA, voters=1
    )
    # q2's vote is T1's alone: T2 is not ranked at all, so no recall and no grade
    assert (got["vote_ndcg10"], got["vote_p1"], got["vote_recall10"]) == (0.5, 0.5, 0.5)


def test_validate_encodes_each_text_where_it_belongs() -> None:
    seen: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        seen.append(texts)
        return _rows(texts)

    assert validate(encode, DATA, voters=3) == pytest.approx(EXPECTED)
    assert seen == [
        ["text of p:q1", "text of p:q2"],  # the validation sentences
        ["chunk of p:a", "chunk of p:b", "chunk of p:c"],  # the training examples as the store embeds them
        ["chunk of t:1", "chunk of t:2", "chunk of t:3"],  # the technique documents likewise
    ]
