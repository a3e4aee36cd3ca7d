"""Quota arithmetic and selection: determinism, tiny totals, empty categories, thresholds, budgets."""

from __future__ import annotations

import random

import pytest

from serving.plans.context import metrics, render
from serving.plans.plans_file import Plan
from serving.plans.selection import Candidate, quota_counts, select

QUOTAS = {
    "technique": 0.25,
    "detection": 0.30,
    "test": 0.15,
    "forensic": 0.10,
    "lolbin": 0.10,
    "vulnerability": 0.05,
    "user": 0.05,
}


def plan(**kw: object) -> Plan:
    base = {"total_chunks": 10, "quotas": QUOTAS, "min_per_category": {"technique": 1, "detection": 1}}
    return Plan(**{**base, **kw})  # type: ignore[arg-type]


def cand(i: int, category: str, score: float, doc: str | None = None, text: str = "x" * 100) -> Candidate:
    return Candidate(
        chunk_id=f"{doc or category + str(i)}#0",
        doc_id=doc or f"{category}{i}",
        source=category,
        category=category,
        score=score,
        title=f"{category} {i}",
        text=text,
    )


def pool() -> list[Candidate]:
    out = []
    for category in QUOTAS:
        out += [cand(i, category, 0.01 + (i % 7) * 0.001) for i in range(8)]
    return out


@pytest.mark.parametrize("total", [1, 2, 3, 5, 10, 12, 50])
def test_quotas_never_exceed_total_and_honour_minimums(total: int) -> None:
    counts = quota_counts(plan(), total)
    assert sum(counts.values()) <= total
    if total >= 2:
        assert counts["technique"] >= 1 and counts["detection"] >= 1


def test_quota_ratios_become_integer_counts() -> None:
    assert quota_counts(plan(), 20) == {
        "technique": 5,
        "detection": 6,
        "test": 3,
        "forensic": 2,
        "lolbin": 2,
        "vulnerability": 1,
        "user": 1,
    }


def test_selection_fills_quotas_then_backfills() -> None:
    only = [cand(i, "technique", 0.02 - i * 0.001) for i in range(6)] + [cand(0, "detection", 0.001)]
    result = select(only, plan(total_chunks=5))
    cats = [c.category for c in result.selected]
    assert len(result.selected) == 5 and cats.count("detection") == 1
    assert any(d.reason.startswith("backfill") for d in result.decisions if d.taken)


def test_empty_categories_are_backfilled_and_total_never_exceeded() -> None:
    result = select(pool(), plan(total_chunks=10))
    assert len(result.selected) == 10


def test_deterministic_regardless_of_candidate_order() -> None:
    candidates = pool()
    first = select(candidates, plan())
    shuffled = candidates[:]
    random.Random(7).shuffle(shuffled)
    assert select(shuffled, plan()) == first


def test_ties_break_on_doc_id() -> None:
    tied = [cand(0, "technique", 0.5, doc="b"), cand(0, "technique", 0.5, doc="a")]
    result = select(tied, plan(total_chunks=1, min_per_category={}))
    assert [c.doc_id for c in result.selected] == ["a"]


def test_all_candidates_below_threshold_select_nothing() -> None:
    result = select(pool(), plan(score_threshold=1.0))
    assert result.selected == ()
    assert all("threshold" in d.reason for d in result.decisions)


def test_character_budget_and_per_document_limit() -> None:
    same_doc = [Candidate(f"d#{i}", "d", "sigma", "detection", 0.9 - i / 100, "t", "y" * 100) for i in range(3)]
    big = [cand(i, "technique", 0.5, text="z" * 400) for i in range(3)]
    result = select(same_doc + big, plan(total_chunks=10, char_budget=1000, min_per_category={}))
    assert sum(len(c.text) for c in result.selected) <= 1000
    assert [c.doc_id for c in result.selected].count("d") == 1
    reasons = {d.reason.split(" ")[0] for d in result.decisions if not d.taken}
    assert {"document", "over"} <= reasons


def test_boosts_change_the_order() -> None:
    a, b = cand(0, "technique", 0.010), cand(0, "detection", 0.011)
    # both categories have no quota here, so the boosted backfill order decides
    only_user = {"user": 1.0}
    plain = select([a, b], plan(total_chunks=1, quotas=only_user, min_per_category={}))
    assert plain.selected[0].category == "detection"
    boosted = select(
        [a, b], plan(total_chunks=1, quotas=only_user, min_per_category={}, category_boosts={"technique": 2.0})
    )
    assert boosted.selected[0].category == "technique"


def test_context_is_grouped_and_cited() -> None:
    result = select(pool(), plan())
    text, citations = render(result.selected, list(QUOTAS))
    assert text.index("## Techniques") < text.index("## Detections")
    assert [c.number for c in citations] == list(range(1, len(citations) + 1))
    assert "Sources:\n[1] " in text


def test_metrics_are_bounded() -> None:
    result = select(pool(), plan())
    m = metrics("technique detection foo", result.selected, result.quotas, top_score_scale=0.02)
    assert 0 <= m["coverage"] <= 1 and 0 <= m["balance"] <= 1 and 0 <= m["confidence"] <= 1
    assert m["coverage"] == pytest.approx(2 / 3, abs=0.01)


def _part(
    chunk_id: str, category: str, techniques: tuple[str, ...], text: str = "lsass credential dumping"
) -> Candidate:
    return Candidate(chunk_id, chunk_id, "src", category, 0.8, chunk_id, text, techniques=techniques)


PART_QUOTAS = {"technique": 3, "detection": 4, "test": 2, "forensic": 1}  # technique, detection, test required


def test_a_plan_missing_a_required_part_scores_lower() -> None:
    whole = [
        _part("t1", "technique", ("T1003.001",)),
        _part("d1", "detection", ("T1003.001",)),
        _part("x1", "test", ("T1003.001",)),
    ]
    full = metrics("lsass credential dumping", whole, PART_QUOTAS, top_score_scale=1.0)
    missing = metrics("lsass credential dumping", whole[:2], PART_QUOTAS, top_score_scale=1.0)
    assert full["completeness"] == 1.0 and missing["completeness"] == pytest.approx(2 / 3, abs=1e-4)
    assert missing["quality"] < full["quality"]
    assert 0 <= missing["quality"] <= full["quality"] <= 1


def test_correlation_is_the_share_of_parts_that_agree_on_techniques() -> None:
    agree = [_part("t1", "technique", ("T1003",)), _part("d1", "detection", ("T1003.001",))]
    assert metrics("q", agree, PART_QUOTAS, 1.0)["correlation"] == 1.0  # a sub-technique's parent matches
    apart = [_part("t1", "technique", ("T1003",)), _part("d1", "detection", ("T1059.001",))]
    assert metrics("q", apart, PART_QUOTAS, 1.0)["correlation"] == 0.0
    mixed = [*agree, _part("d2", "detection", ("T1059.001",)), _part("d3", "detection", ())]
    # pairs across categories: t1-d1 agree, t1-d2 not (d3 is unlabelled); d1-d2 are one category
    assert metrics("q", mixed, PART_QUOTAS, 1.0)["correlation"] == 0.5
    assert metrics("q", agree[:1], PART_QUOTAS, 1.0)["correlation"] == 0.0  # one category: nothing to correlate
