"""A report sentence's fused rows verified by the verifier's probabilities (serving/search/verified_ranking.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import psycopg
import pytest

from serving.search import analysis
from serving.search.search_file import load_search_config
from serving.search.verified_ranking import rerank, verified

CONFIG = load_search_config()
SENTENCE = ("a-sentence-model", np.ones(4, dtype=np.float32) / 2)


def _rows() -> list[dict[str, Any]]:
    return [
        {"doc_id": doc_id, "source": doc_id.split(":")[0], "score": score}
        for doc_id, score in (("mitre_attack:T1003", 0.9), ("mitre_attack:T1003.001", 0.8), ("sigma:r1", 0.7))
    ]


class Check:
    source = "mitre_attack"

    def __init__(self, probabilities: Mapping[str, float]) -> None:
        self.probabilities = probabilities
        self.calls: list[str] = []

    def __call__(self, conn: psycopg.Connection, model_id: str, vector: np.ndarray, text: str) -> Mapping[str, float]:
        self.calls.append(text)
        return self.probabilities


def test_a_verified_technique_scores_the_noisy_or_of_its_score_and_weighted_probability() -> None:
    rows = verified(_rows(), {"mitre_attack:T1003.001": 0.5, "mitre_attack:T9999": 1.0}, 1.0)
    scores = {r["doc_id"]: r["score"] for r in rows}
    assert scores == pytest.approx({"mitre_attack:T1003": 0.9, "mitre_attack:T1003.001": 0.9, "sigma:r1": 0.7})
    assert verified([{"doc_id": "mitre_attack:T1", "score": 0.6}], {"mitre_attack:T1": 1.0}, 1.0)[0]["score"] == 1.0


def test_without_probabilities_the_scores_are_as_fused() -> None:
    assert verified(_rows(), {}, 1.0) == _rows()


def test_only_a_report_sentence_with_a_sentence_vector_and_rows_of_the_checked_source_is_checked() -> None:
    report = analysis.analyse("The actor dumped credentials from LSASS memory on the domain controller")
    rule = analysis.analyse("Identifies credential dumping from LSASS memory with procdump.")
    check = Check({"mitre_attack:T1003.001": 1.0})
    conn: Any = None
    assert rerank(_rows(), check, conn, SENTENCE, "q", rule, CONFIG) == _rows()
    assert rerank(_rows(), check, conn, None, "q", report, CONFIG) == _rows()
    assert rerank(_rows(), None, conn, SENTENCE, "q", report, CONFIG) == _rows()
    assert rerank(_rows()[2:], check, conn, SENTENCE, "q", report, CONFIG) == _rows()[2:]
    assert check.calls == []
    weight = CONFIG.weights("sentence").verified
    assert weight
    rows = rerank(_rows(), check, conn, SENTENCE, "q", report, CONFIG)
    assert check.calls == ["q"] and rows[1]["score"] == pytest.approx(1 - 0.2 * (1 - weight))
    assert rows[0] == _rows()[0] and rows[2] == _rows()[2]
