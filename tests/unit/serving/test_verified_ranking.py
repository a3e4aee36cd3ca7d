"""A report sentence's rows re-ranked by the verifier's probabilities (serving/search/verified_ranking.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import psycopg

from serving.search import analysis
from serving.search.search_file import load_search_config
from serving.search.verified_ranking import rerank, verified

CONFIG = load_search_config()
SENTENCE = ("a-sentence-model", np.ones(4, dtype=np.float32) / 2)


def _row(doc_id: str, score: float, *, exact: bool = False) -> dict[str, Any]:
    return {"doc_id": doc_id, "chunk_id": f"{doc_id}#0", "source": doc_id.split(":")[0], "score": score, "exact": exact}


class Check:
    source = "mitre_attack"

    def __init__(self, probabilities: Mapping[str, float]) -> None:
        self.probabilities = probabilities
        self.calls: list[str] = []

    def __call__(self, conn: psycopg.Connection, model_id: str, vector: np.ndarray, text: str) -> Mapping[str, float]:
        self.calls.append(text)
        return self.probabilities


ROWS = [_row("mitre_attack:T1003", 0.9), _row("mitre_attack:T1003.001", 0.8), _row("sigma:r1", 0.7)]


def test_a_verified_technique_rises_by_its_weighted_probability() -> None:
    ranked = verified(ROWS, {"mitre_attack:T1003.001": 0.5, "mitre_attack:T9999": 1.0}, 1.0)
    assert [r["doc_id"] for r in ranked] == ["mitre_attack:T1003.001", "mitre_attack:T1003", "sigma:r1"]
    assert ranked[0]["score"] == 1.3 and ranked[1]["score"] == 0.9


def test_an_exact_identifier_stays_first() -> None:
    rows = [_row("mitre_attack:T1059", 0.1, exact=True), *ROWS]
    assert verified(rows, {"mitre_attack:T1003": 1.0}, 5.0)[0]["doc_id"] == "mitre_attack:T1059"


def test_only_a_report_sentence_with_a_sentence_vector_and_rows_of_the_checked_source_is_checked() -> None:
    report = analysis.analyse("The actor dumped credentials from LSASS memory on the domain controller")
    rule = analysis.analyse("Identifies credential dumping from LSASS memory with procdump.")
    check = Check({"mitre_attack:T1003.001": 1.0})
    conn: Any = None
    assert rerank(ROWS, check, conn, SENTENCE, "q", rule, CONFIG) == ROWS
    assert rerank(ROWS, check, conn, None, "q", report, CONFIG) == ROWS
    assert rerank(ROWS, None, conn, SENTENCE, "q", report, CONFIG) == ROWS
    assert rerank([_row("sigma:r1", 0.7)], check, conn, SENTENCE, "q", report, CONFIG) == [_row("sigma:r1", 0.7)]
    assert check.calls == []
    ranked = rerank(ROWS, check, conn, SENTENCE, "q", report, CONFIG)
    assert check.calls == ["q"] and ranked[0]["doc_id"] == "mitre_attack:T1003.001"
    assert ranked[0]["score"] == 0.8 + CONFIG.weights("sentence").verified  # type: ignore[operator]
