"""Ranking metrics over graded relevance judgements, and a query set scored through POST /v1/search."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from lib.api import Client

K = 10
Scores = dict[tuple[str, str], list[tuple[float, float, float, float]]]


def ndcg(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    dcg = sum((2 ** grades.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(sorted(grades.values(), reverse=True)[:k]))
    return dcg / idcg if idcg > 0 else 0.0


def mrr(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:k]) if grades.get(d, 0) > 0), 0.0)


def recall(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    relevant = {d for d, g in grades.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def precision_at_1(ranked: list[str], grades: dict[str, int]) -> float:
    """1 when the first result is relevant (any grade), else 0."""
    return 1.0 if ranked and grades.get(ranked[0], 0) > 0 else 0.0


def means(values: list[tuple[float, float, float, float]]) -> list[float]:
    return [sum(v[i] for v in values) / len(values) for i in range(4)]


def group_of(item: dict[str, Any], group_by: str) -> str:
    """The row a query counts in: its task, or its query shape (serving/search/analysis.py)."""
    task = str(item.get("task", "all"))
    if group_by == "shape":
        from serving.search.analysis import classify

        return f"{task}/{classify(item['query'])}"
    return task


def evaluate(http: Client, items: list[dict[str, Any]], modes: list[str], extra: dict[str, Any],
             dropped: dict[str, int] | None = None, group_by: str = "task") -> tuple[Scores, int]:  # fmt: skip
    """nDCG@10, MRR@10, Recall@10 and P@1 per (group, mode) and overall ("ALL"); and the failed requests.
    `dropped` adds up, per mode, the vector candidates under the serving model's threshold."""
    scores: Scores = defaultdict(list)
    failures = 0
    for item in items:
        grades = {r["doc_id"]: int(r.get("grade", 1)) for r in item["relevant"]}
        filters = {k: v for k, v in (item.get("filters") or {}).items() if v}
        for mode in modes:
            body = {"query": item["query"][:8000], "mode": mode, "k": K, "filters": filters, **extra}
            response = http.post("/v1/search", json={**body, "return": {"snippets": False}})
            answer = response.json() if response.status_code == 200 else {}
            failures += not answer
            ranked = [r["doc_id"] for r in answer.get("results", [])]
            if dropped is not None:
                dropped[mode] = dropped.get(mode, 0) + answer.get("below_vector_threshold", 0)
            result = (ndcg(ranked, grades), mrr(ranked, grades), recall(ranked, grades), precision_at_1(ranked, grades))
            scores[(group_of(item, group_by), mode)].append(result)
            scores[("ALL", mode)].append(result)
    return scores, failures
