"""Reciprocal-rank fusion of leg rows, grouping by document and the window order."""

from __future__ import annotations

import dataclasses

import pytest

from serving.search import analysis as logic
from serving.search import fusion


def _row(chunk: str, score: float, **extra: object) -> dict:
    return {
        "chunk_id": chunk,
        "doc_id": chunk.split("#")[0],
        "source": "sigma",
        "title": chunk,
        "identifiers": "",
        "score": score,
        "ident_hit": False,
        **extra,
    }


def _plan(mode: str = "hybrid", **kw: object) -> logic.Plan:
    args = {
        "k": 10,
        "offset": 0,
        "query": "lsass",
        "fts_k": None,
        "vec_k": None,
        "w_fts": 1.0,
        "w_vec": 1.0,
        "w_fuzzy": 0.5,
        "rerank_k": 50,
        "group_by_doc": True,
        **kw,
    }
    return logic.plan_for(mode, **args)  # type: ignore[arg-type]


def test_hybrid_score_is_normalised_rrf_with_leg_ranks() -> None:
    plan = _plan()
    legs = {
        "fts": [_row("a#0", 0.9), _row("b#0", 0.5)],
        "vec": [_row("b#0", 0.8), _row("a#0", 0.7)],
        "fuzzy": [_row("c#0", 0.6)],
    }
    items = {i["chunk_id"]: i for i in fusion.fuse(legs, [], plan, 60, logic.rrf_max(plan, 60))}
    top = logic.rrf_max(plan, 60)
    assert items["a#0"]["score"] == pytest.approx((1 / 61 + 1 / 62) / top)
    assert items["b#0"]["score"] == pytest.approx((1 / 62 + 1 / 61) / top)
    assert items["c#0"]["score"] == pytest.approx((0.5 / 61) / top)
    assert (items["a#0"]["fts_rank"], items["a#0"]["vec_rank"], items["a#0"]["fuzzy_rank"]) == (1, 2, None)
    assert items["b#0"]["vec_score"] == 0.8


def test_single_leg_modes_keep_the_leg_score() -> None:
    plan = _plan("vector")
    items = fusion.fuse({"vec": [_row("a#0", 0.42)]}, [], plan, 60, 1.0)
    assert items[0]["score"] == 0.42


def test_exact_and_child_rows_are_marked() -> None:
    plan = _plan(query="T1003")
    exact = [_row("mitre_attack:T1003#0", 1.0, is_exact=True), _row("mitre_attack:T1003.001#0", 1.0, is_exact=False)]
    items = {i["chunk_id"]: i for i in fusion.fuse({"fts": [_row("x#0", 0.3)]}, exact, plan, 60, 1.0)}
    assert items["mitre_attack:T1003#0"]["exact"] and items["mitre_attack:T1003#0"]["tier"] == 0
    assert not items["mitre_attack:T1003.001#0"]["exact"] and items["mitre_attack:T1003.001#0"]["tier"] == 1


def test_window_keeps_the_best_chunk_per_document_in_order() -> None:
    items = [
        {"chunk_id": "a#0", "doc_id": "a", "exact": False, "tier": 0, "ident_hit": False, "score": 0.2},
        {"chunk_id": "a#1", "doc_id": "a", "exact": False, "tier": 0, "ident_hit": False, "score": 0.9},
        {"chunk_id": "b#0", "doc_id": "b", "exact": False, "tier": 0, "ident_hit": True, "score": 0.1},
        {"chunk_id": "c#0", "doc_id": "c", "exact": True, "tier": 0, "ident_hit": False, "score": 0.0},
    ]
    grouped = fusion.window(items, group_by_doc=True, size=10)
    assert [i["chunk_id"] for i in grouped] == ["c#0", "b#0", "a#1"]
    assert [i["chunk_id"] for i in fusion.window(items, group_by_doc=False, size=2)] == ["c#0", "b#0"]


def _chunk(chunk_id: str, score: float) -> dict:
    return {
        "chunk_id": chunk_id,
        "doc_id": chunk_id.split("#")[0],
        "exact": False,
        "tier": 0,
        "ident_hit": False,
        "score": score,
    }


@pytest.mark.parametrize(
    ("aggregate", "order", "a_score"),
    [
        ("max", ["b#0", "a#0"], 0.8),  # b's one strong chunk beats a's best
        ("top2", ["a#0", "b#0"], 0.75),  # a's two good chunks beat b's one
        ("rrf", ["a#0", "b#0"], (1 / 62 + 1 / 63 + 1 / 64) * 61),  # a holds ranks 2, 3 and 4
    ],
)
def test_document_scores_from_their_chunks(aggregate: str, order: list[str], a_score: float) -> None:
    items = [_chunk("b#0", 0.9), _chunk("a#0", 0.8), _chunk("a#1", 0.7), _chunk("a#2", 0.1)]
    grouped = fusion.window(items, group_by_doc=True, size=10, aggregate=aggregate, rrf_k0=60)
    assert [i["chunk_id"] for i in grouped] == order  # the best chunk stands for its document
    assert {i["doc_id"]: i["score"] for i in grouped}["a"] == pytest.approx(a_score)


def test_pool_fts_ranks_the_vector_pool_lexically() -> None:
    pool = [_row("a#0", 0.9, pool_fts=None), _row("b#0", 0.8, pool_fts=0.2), _row("c#0", 0.7, pool_fts=0.5)]
    assert [(r["chunk_id"], r["score"]) for r in fusion.pool_fts(pool, 5)] == [("c#0", 0.5), ("b#0", 0.2)]
    assert len(fusion.pool_fts(pool, 1)) == 1


def test_fts_then_vec_reranks_candidates_by_cosine_then_fills_from_the_vector_leg() -> None:
    candidates = [_row("a#0", 0.9, vec_score=0.3), _row("b#0", 0.5, vec_score=0.8)]  # best full text first
    fill = [_row("b#0", 0.8), _row("c#0", 0.95), _row("d#0", 0.2)]
    exact = [_row("x#0", 1.0, is_exact=True), _row("y#0", 1.0, is_exact=False)]
    items = {i["chunk_id"]: i for i in fusion.then_vec(candidates, fill, exact)}
    assert (items["b#0"]["tier"], items["b#0"]["score"], items["b#0"]["vec_rank"], items["b#0"]["fts_rank"]) == (
        1,
        0.8,
        1,
        2,
    )
    assert (items["a#0"]["vec_rank"], items["a#0"]["fts_rank"], items["a#0"]["fts_score"]) == (2, 1, 0.9)
    assert (items["c#0"]["tier"], items["c#0"]["vec_rank"], items["c#0"]["fts_rank"]) == (0, 1, None)
    assert items["d#0"]["vec_rank"] == 2  # ranks among the fill-ins only
    assert items["x#0"]["exact"] and items["x#0"]["score"] == 1.0 and "y#0" not in items
    order = [i["chunk_id"] for i in fusion.window(list(items.values()), group_by_doc=True, size=10)]
    assert order == ["x#0", "b#0", "a#0", "c#0", "d#0"]  # exact, re-ranked candidates, then fill-ins


def _voted(scored: tuple[tuple[str, float], ...]) -> logic.Plan:
    """A sentence's plan: full text, vectors and the procedures voter leg (weight 8), some legs scored."""
    return dataclasses.replace(
        _plan(query="the actor dumped lsass memory with a tool"), w_procedures=8.0, scored=scored
    )


VOTED_LEGS = {
    "fts": [_row("a#0", 0.9), _row("b#0", 0.5)],
    "vec": [_row("a#0", 0.8), _row("b#0", 0.7), _row("c#0", 0.6)],
    "procedures": [_row("a#0", 12.0), _row("c#0", 9.0), _row("b#0", 3.0)],  # votes of the nearest examples
}


def test_a_scored_voter_adds_its_weight_times_the_vote_over_the_best_vote() -> None:
    plan = _voted((("procedures", 2.0),))
    top = logic.rrf_max(plan, 60)
    assert top == pytest.approx((1 + 1 + 8) / 61 + 2.0)  # a chunk first in every leg with the best vote
    items = {i["chunk_id"]: i for i in fusion.fuse(VOTED_LEGS, [], plan, 60, top)}
    assert items["a#0"]["score"] == pytest.approx(1.0)  # first everywhere: the maximum, not over it
    assert items["b#0"]["score"] == pytest.approx((1 / 62 + 1 / 62 + 8 / 63 + 2.0 * 3 / 12) / top)
    assert items["c#0"]["score"] == pytest.approx((1 / 63 + 8 / 62 + 2.0 * 9 / 12) / top)
    assert (items["c#0"]["procedures_score"], items["c#0"]["procedures_rank"]) == (9.0, 2)
    assert all(0 < i["score"] <= 1 for i in items.values())


def test_the_vote_lifts_a_document_past_one_of_a_better_rank() -> None:
    """b and c each have a rank the other lacks; c's vote (9 of 12) beats b's (3 of 12) only when it is scored."""
    legs = {**VOTED_LEGS, "procedures": [_row("b#0", 10.0), _row("c#0", 9.9), _row("a#0", 0.1)]}

    def order(plan: logic.Plan) -> list[str]:
        items = fusion.fuse(legs, [], plan, 60, logic.rrf_max(plan, 60))
        return [i["chunk_id"] for i in sorted(items, key=lambda i: -i["score"])]

    assert order(_voted(())) == ["b#0", "a#0", "c#0"]
    assert order(_voted((("procedures", 5.0),))) == ["b#0", "c#0", "a#0"]


def test_without_scored_legs_the_fusion_is_reciprocal_ranks_alone() -> None:
    plan = _voted(())
    top = logic.rrf_max(plan, 60)
    assert top == pytest.approx((1 + 1 + 8) / 61)
    items = {i["chunk_id"]: i for i in fusion.fuse(VOTED_LEGS, [], plan, 60, top)}
    assert items["a#0"]["score"] == pytest.approx(1.0)
    assert items["c#0"]["score"] == pytest.approx((1 / 63 + 8 / 62) / top)


def test_a_scored_leg_without_votes_adds_nothing() -> None:
    plan = _voted((("procedures", 2.0), ("neighbours", 1.0)))  # neighbours did not run; procedures found none
    legs = {**VOTED_LEGS, "procedures": [_row("a#0", 0.0)]}
    top = logic.rrf_max(plan, 60)
    items = {i["chunk_id"]: i for i in fusion.fuse(legs, [], plan, 60, top)}
    assert items["a#0"]["score"] == pytest.approx((1 / 61 + 1 / 61 + 8 / 61) / top)
    assert items["a#0"]["score"] < 1.0  # the unspent weights stay in the maximum: no score past it


def test_scores_alone_stay_in_zero_one() -> None:
    plan = dataclasses.replace(_voted((("procedures", 1.0),)), w_fts=0.0, w_vec=0.0, w_procedures=0.0)
    assert logic.rrf_max(plan, 60) == pytest.approx(1.0)
    items = {i["chunk_id"]: i for i in fusion.fuse(VOTED_LEGS, [], plan, 60, logic.rrf_max(plan, 60))}
    assert items["c#0"]["score"] == pytest.approx(9 / 12)
