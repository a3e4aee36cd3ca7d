"""Query analysis, planning and re-scoring (no database)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from serving.contract.thresholds import ShapeThresholds
from serving.search import analysis as search
from serving.search.search_file import load_search_config

# The shipped tuning without boosts or thresholds.
NEUTRAL = dataclasses.replace(load_search_config(), source_boosts={}, thresholds={})


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("T1003", "technique"),
        ("t1003.001", "sub_technique"),
        ("CVE-2021-44228", "cve"),
        ("capec-66", "capec"),
        ("AML.T0051", "atlas"),
        ("D3-AL", "d3fend"),
        ("195e1b9d-bfc2-4ffa-ab4e-35aef69815f8", "uuid"),
        ("mimikatz.exe", "identifier"),
        ("G0007", "identifier"),
        ("mimikatz", "keyword"),
        ("lsass memory dump", "keyword"),
        ("how do attackers dump lsass memory", "sentence"),
        ("uses HTTPS to communicate with its C2 servers.", "sentence"),
        ("runs cmd.exe /c whoami, e.g. to list the user", "sentence"),  # no sentence ends inside
        ("Dumps LSASS memory with procdump. This test needs admin rights.", "natural"),
        ('Adds a run key. "Reg add" writes it', "natural"),
        ("Identifies abuse of wuauclt.exe to load an arbitrary DLL.", "natural"),  # a pasted rule's description
        ("The following analytic detects the deletion of shadow copies", "natural"),
        ("creates a scheduled task on the system that provides persistence.", "sentence"),  # a report's line
    ],
)
def test_classify(query: str, kind: str) -> None:
    assert search.classify(query) == kind


def test_natural_queries_are_ored_and_identifiers_extracted() -> None:
    a = search.analyse("how do attackers run mimikatz.exe against T1003.001 or lsass")
    assert a.query_type == "sentence"
    assert a.fts_text.startswith("how or do or attackers")
    assert {"mimikatz.exe", "mimikatz", "t1003.001", "t1003"} <= set(a.ident_text.split(" or "))
    assert a.exact_forms == ()


def test_identifier_queries_have_exact_forms() -> None:
    assert search.analyse(" t1003.001 ").exact_forms == ("T1003.001",)
    assert search.analyse("aml.t0051").exact_forms == ("AML.T0051",)
    assert search.analyse("195E1B9D-BFC2-4FFA-AB4E-35AEF69815F8").exact_forms == (
        "195e1b9d-bfc2-4ffa-ab4e-35aef69815f8",
    )
    assert search.exact_doc_ids(["T1003"], ["sigma", "mitre_attack"]) == ["mitre_attack:T1003", "sigma:T1003"]


def test_expand_techniques_and_children() -> None:
    known = ["T1003", "T1003.001", "T1003.002", "T1059", "T1059.001", "T10030"]
    assert search.expand_techniques(["T1003"], known) == ["T1003", "T1003.001", "T1003.002"]
    assert search.expand_techniques(["T1003.001"], known) == ["T1003.001"]
    assert search.child_forms(search.analyse("T1059"), known) == ["T1059.001"]
    assert search.child_forms(search.analyse("T1059.001"), known) == []


def test_fuzzy_score_tolerates_typos() -> None:
    assert search.fuzzy_score("mimikats", "Mimikatz", "mimikatz mimikatz.exe") >= 0.85
    assert search.fuzzy_score("mimikats", "Registry Run Keys", "t1547") < 0.6


def _plan(mode: str, *, query: str, **overrides: Any) -> search.Plan:  # noqa: ANN401
    """plan_for with the request defaults (k 10, rerank_k 50, weights 1/1/0.5, grouped) and `overrides`."""
    args: dict[str, Any] = {
        "k": 10,
        "offset": 0,
        "fts_k": None,
        "vec_k": None,
        "w_fts": 1,
        "w_vec": 1,
        "w_fuzzy": 0.5,
        "rerank_k": 50,
        "group_by_doc": True,
    }
    return search.plan_for(mode, query=query, **{**args, **overrides})


def test_plans() -> None:
    fused = _plan("hybrid", query="lsass")
    assert (fused.fts_k, fused.vec_k, fused.fuzzy_k, fused.single_leg, fused.needs_vector) == (60, 60, 60, "", True)
    assert search.rrf_max(fused, 60) == pytest.approx(2.5 / 61)
    long = _plan("hybrid", query="x" * 100, k=50, offset=100)
    assert (long.fuzzy_k, long.w_fuzzy, long.fts_k, long.window) == (0, 0.0, 450, 150)
    fts = _plan("fts", query="x", k=5, w_fuzzy=1, rerank_k=10, group_by_doc=False)
    assert (fts.vec_k, fts.needs_vector, fts.single_leg) == (0, False, "fts")
    fuzzy = _plan("fuzzy", query="credentail dumping from lsass memory", k=5, rerank_k=10, group_by_doc=False)
    # typo-tolerant lexical search: trigram titles and full text fused, no vectors
    assert (fuzzy.fts_k, fuzzy.vec_k, fuzzy.fuzzy_k, fuzzy.single_leg, fuzzy.needs_vector) == (60, 0, 100, "", False)
    assert search.rrf_max(fuzzy, 60) == pytest.approx(1.5 / 61)


def _row(
    chunk: str, score: float, source: str = "sigma", exact: bool = False, tier: int = 0, ident: bool = False
) -> dict:
    return {
        "chunk_id": chunk,
        "doc_id": chunk.split("#")[0],
        "source": source,
        "title": chunk,
        "identifiers": "",
        "score": score,
        "exact": exact,
        "tier": tier,
        "ident_hit": ident,
        "fuzzy_score": None,
    }


def test_rescore_orders_exact_children_identifiers_then_score() -> None:
    rows = [_row("a#0", 0.9), _row("b#0", 0.1, exact=True), _row("c#0", 0.2, tier=1), _row("d#0", 0.3, ident=True)]
    out = search.rescore(
        rows, mode="hybrid", query="T1003", analysis=search.analyse("T1003"), config=NEUTRAL, min_score=None
    )
    assert [r["chunk_id"] for r in out] == ["b#0", "c#0", "d#0", "a#0"]
    assert out[0]["score"] == 1.0


def test_rescore_applies_boosts_and_thresholds() -> None:
    config = dataclasses.replace(
        NEUTRAL,
        source_boosts={"lolbas": 2.0},
        thresholds={"vector": ShapeThresholds({"keyword": 0.3, "default": 0.0})},
    )
    rows = [_row("a#0", 0.5), _row("b#0", 0.4, source="lolbas"), _row("c#0", 0.2)]
    out = search.rescore(
        rows, mode="vector", query="x y", analysis=search.analyse("x y"), config=config, min_score=None
    )
    assert [(r["chunk_id"], r["score"]) for r in out] == [("b#0", 0.8), ("a#0", 0.5)]
    strict = search.rescore(
        rows, mode="vector", query="x y", analysis=search.analyse("x y"), config=config, min_score=0.6
    )
    assert [r["chunk_id"] for r in strict] == ["b#0"]
