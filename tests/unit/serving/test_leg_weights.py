"""The legs' weights by query shape: report sentences run the procedures leg, pasted rules and tests do not."""

from __future__ import annotations

from typing import Any

import pytest

from serving.contract.requests import SearchRequest
from serving.search import analysis, leg_weights
from serving.search.search_file import load_search_config
from serving.search.technique_names import TechniqueNames

CONFIG = load_search_config()
NAMES = TechniqueNames.from_lookup({"T1003.001": "OS Credential Dumping: LSASS Memory"})


def _plan(query: str) -> analysis.Plan:
    found = analysis.analyse(query)
    request = SearchRequest(query=query)
    w_fts, w_vec, w_fuzzy = leg_weights.weights(request, found, CONFIG)
    plan = analysis.plan_for(
        "hybrid",
        k=10,
        offset=0,
        query=query,
        fts_k=None,
        vec_k=None,
        w_fts=w_fts,
        w_vec=w_vec,
        w_fuzzy=w_fuzzy,
        rerank_k=50,
        group_by_doc=True,
        query_type=found.query_type,
    )
    params: dict[str, Any] = {}
    return leg_weights.label(request, found, plan, params, {}, NAMES, CONFIG, then_vec=False)


def test_a_report_sentence_runs_the_procedures_leg_with_scored_votes() -> None:
    plan = _plan("The actor created a scheduled task on the host to keep its implant running.")
    assert plan.w_procedures == CONFIG.weights("sentence").procedures > 0
    assert dict(plan.scored) == CONFIG.weights("sentence").scored


@pytest.mark.parametrize(
    "query",
    [
        "Identifies abuse of the Windows Update Auto Update Client (wuauclt.exe) to load an arbitrary DLL.",
        "The following analytic detects the deletion of volume shadow copies with vssadmin.",
        "Dumps LSASS memory with procdump. This test needs admin rights.",
    ],
)
def test_a_pasted_rule_or_test_runs_no_procedures_leg(query: str) -> None:
    plan = _plan(query)
    assert plan.w_procedures == 0.0 and plan.scored == ()
    assert plan.w_neighbours == CONFIG.weights("natural").neighbours


def test_a_sentence_naming_a_technique_keeps_the_default_voter_weights() -> None:
    plan = _plan("The actor dumped OS Credential Dumping: LSASS Memory on the host")
    assert plan.w_label == leg_weights.LABEL_WEIGHT and plan.scored == ()
    assert plan.w_procedures == CONFIG.procedures.weight
