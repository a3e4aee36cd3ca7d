"""Fit the map's selector (search.yaml `map.selector`) on whole labelled reports and measure it: each sentence's
candidates from the sentence model's held vectors (serving/mapping/held_path.py), labelled by the annotations
overlapping the sentence, a logistic regression over their evidence (serving/mapping/selector.py), with
cross-validation by report.

    python bench/map_selector.py --database-url postgresql://... [--reports ../shared/eval/cti_dev_reports.jsonl]
        [--sentences ../shared/eval/cti_dev_queries.jsonl] [--voters 20] [--top 5] [--folds 5] [--floor 0.05]

Prints per fold and overall: per-report micro/macro precision, recall and F1 at each min_score, the sentence
ranking of the candidates on the labelled sentences (nDCG@10, P@1), the coefficients fitted on every report (the
lines to paste into search.yaml) and how calibrated they are (mean predicted against observed, by decile).
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from serving.mapping.selector import features
from serving.mapping.sentences import split
from serving.search.search_file import MAP_FEATURES as FEATURES

from lib.api import api_settings
from lib.queries import load_items
from lib.relevance import ndcg, precision_at_1

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "eval"
SWEEP = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def searcher_of(url: str) -> Any:  # noqa: ANN401 - the in-process API's current Searcher
    from fastapi.testclient import TestClient

    from serving.api.app import create_app

    client = TestClient(create_app(api_settings(url)))
    client.__enter__()
    return client.app.state.service.model.current()  # type: ignore[attr-defined]


def wait_candidates(searcher: Any, sentences: list[Any], voters: int, top: int) -> list[Any]:  # noqa: ANN401
    """The candidates once the sentence model and its vectors are loaded (they load in the background)."""
    from serving.mapping.held_path import held_candidates

    for _ in range(600):
        found = held_candidates(searcher, sentences, voters=voters, top=top)
        if found is not None:
            return found
        time.sleep(0.5)
    raise SystemExit("no sentence model serves, or its vectors were not held within 5 minutes")


def report_rows(searcher: Any, reports: list[dict[str, Any]], voters: int, top: int) -> list[dict[str, Any]]:  # noqa: ANN401
    """One row per (report, sentence, candidate): features, label, technique."""
    rows: list[dict[str, Any]] = []
    for r, report in enumerate(reports):
        sentences = split(report["text"])
        found = wait_candidates(searcher, sentences, voters, top)
        for s, (sentence, cands) in enumerate(zip(sentences, found, strict=True)):
            gold = {
                a["technique"] for a in report["annotations"] if a["start"] < sentence.end and sentence.start < a["end"]
            }
            for c in cands:
                rows.append(
                    {
                        "report": r,
                        "sentence": s,
                        "technique": c.technique,
                        "x": features(c),
                        "y": c.technique in gold,
                        "named": c.named,
                    }
                )
    return rows


def matrix(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray([[r["x"][f] for f in FEATURES] for r in rows]), np.asarray(
        [r.get("y", False) for r in rows], dtype=int
    )


def fit(rows: list[dict[str, Any]]) -> Any:  # noqa: ANN401 - a fitted LogisticRegression
    from sklearn.linear_model import LogisticRegression

    x, y = matrix(rows)
    return LogisticRegression(C=1.0, max_iter=2000).fit(x, y)


def probabilities(model: Any, rows: list[dict[str, Any]]) -> np.ndarray:  # noqa: ANN401
    x, _ = matrix(rows)
    p = model.predict_proba(x)[:, 1] if len(rows) else np.zeros(0)
    return np.where([r["named"] for r in rows], 1.0, p)


def report_scores(rows: list[dict[str, Any]], p: np.ndarray, floor: float, top: int = 0) -> dict[int, dict[str, float]]:
    """Per report, each technique's noisy-or of its sentences' probabilities at or over the floor (its `top`
    best sentences only, when set)."""
    keep: dict[tuple[int, str], list[float]] = defaultdict(list)
    best: dict[tuple[int, int, str], float] = {}
    for row, prob in zip(rows, p, strict=True):
        if prob >= floor:
            key = (row["report"], row["sentence"], row["technique"])
            best[key] = max(best.get(key, 0.0), float(prob))
    for (r, _, t), prob in best.items():
        keep[(r, t)].append(prob)
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for (r, t), probs in keep.items():
        chosen = sorted(probs, reverse=True)[:top] if top else probs
        out[r][t] = 1.0 - math.prod(1.0 - q for q in chosen)
    return out


def prf(
    found: dict[int, dict[str, float]], gold: dict[int, set[str]], reports: list[int], threshold: float
) -> dict[str, float]:
    tp = fp = fn = 0
    macro: list[tuple[float, float, float]] = []
    for r in reports:
        chosen = {t for t, s in found.get(r, {}).items() if s >= threshold}
        a, b, c = len(chosen & gold[r]), len(chosen - gold[r]), len(gold[r] - chosen)
        tp, fp, fn = tp + a, fp + b, fn + c
        p_, r_ = (a / (a + b) if a + b else 0.0), (a / (a + c) if a + c else 0.0)
        macro.append((p_, r_, 2 * p_ * r_ / (p_ + r_) if p_ + r_ else 0.0))
    precision, recall = (tp / (tp + fp) if tp + fp else 0.0), (tp / (tp + fn) if tp + fn else 0.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    m = np.mean(macro, axis=0) if macro else np.zeros(3)
    return {"P": precision, "R": recall, "F1": f1, "macroP": float(m[0]), "macroR": float(m[1]), "macroF1": float(m[2])}


def sentence_ranking(searcher: Any, items: list[dict[str, Any]], model: Any, voters: int, top: int) -> dict[str, float]:  # noqa: ANN401
    """The labelled sentences ranked by the selector's probability (the map's ranking of one sentence)."""
    from serving.mapping.sentences import Sentence

    sentences = [Sentence(text=i["query"], start=0, end=len(i["query"])) for i in items]
    found = wait_candidates(searcher, sentences, voters, top)
    n = p1 = 0.0
    for item, cands in zip(items, found, strict=True):
        rows = [{"x": features(c), "named": c.named} for c in cands]
        probs = probabilities(model, rows) if rows else np.zeros(0)
        ranked = [
            f"mitre_attack:{c.technique}" for c, _ in sorted(zip(cands, probs, strict=True), key=lambda cp: -cp[1])
        ]
        grades = {r["doc_id"]: int(r["grade"]) for r in item["relevant"]}
        n += ndcg(ranked, grades)
        p1 += precision_at_1(ranked, grades)
    return {"nDCG@10": round(n / len(items), 4), "P@1": round(p1 / len(items), 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--reports", type=Path, default=SHARED / "cti_dev_reports.jsonl")
    ap.add_argument("--sentences", type=Path, default=SHARED / "cti_dev_queries.jsonl")
    ap.add_argument("--voters", type=int, default=20)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--floor", type=float, default=0.05)
    args = ap.parse_args()
    searcher = searcher_of(args.database_url)
    reports = load_items(args.reports)
    gold = {i: set(r["techniques"]) for i, r in enumerate(reports)}
    rows = report_rows(searcher, reports, args.voters, args.top)
    print(f"{len(rows)} candidates over {len(reports)} reports, {sum(r['y'] for r in rows)} annotated")  # noqa: T201
    predicted = np.zeros(len(rows))
    for fold in range(args.folds):
        test = {r for r in range(len(reports)) if r % args.folds == fold}
        model = fit([row for row in rows if row["report"] not in test])
        at = [i for i, row in enumerate(rows) if row["report"] in test]
        predicted[at] = probabilities(model, [rows[i] for i in at])
    everyone = list(range(len(reports)))
    for floor, top in ((args.floor, 0), (args.floor, 1), (args.floor, 2), (0.1, 2), (0.2, 0), (0.2, 2)):
        held_out = report_scores(rows, predicted, floor, top)
        print(f"cross-validated by report, floor {floor}, best {top or 'all'} sentences:")  # noqa: T201
        for threshold in (0.1, 0.15, *SWEEP):
            f = prf(held_out, gold, everyone, threshold)
            print(f"  min_score {threshold:.2f}: " + "  ".join(f"{k} {v:.3f}" for k, v in f.items()))  # noqa: T201
    model = fit(rows)
    p = probabilities(model, rows)
    print("fitted on every report (in-sample):")  # noqa: T201
    found = report_scores(rows, p, args.floor)
    for threshold in SWEEP:
        f = prf(found, gold, everyone, threshold)
        print(f"  min_score {threshold:.2f}: " + "  ".join(f"{k} {v:.3f}" for k, v in f.items()))  # noqa: T201
    _, y = matrix(rows)
    order = np.argsort(p)
    print("calibration (deciles of the predicted probability: mean predicted, observed):")  # noqa: T201
    for part in np.array_split(order, 10):
        print(f"  {p[part].mean():.3f} {y[part].mean():.3f}")  # noqa: T201
    if args.sentences.exists():
        items = load_items(args.sentences)
        print(
            "labelled sentences ranked by the selector:",
            sentence_ranking(searcher, items, model, args.voters, args.top),
        )  # noqa: T201
    print("search.yaml map.selector:")  # noqa: T201
    print(f"  voters: {args.voters}\n  top: {args.top}\n  floor: {args.floor}")  # noqa: T201
    print(f"  intercept: {model.intercept_[0]:.4f}")  # noqa: T201
    weights = ", ".join(f"{f}: {w:.4f}" for f, w in zip(FEATURES, model.coef_[0], strict=True))
    print(f"  weights: {{{weights}}}")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
