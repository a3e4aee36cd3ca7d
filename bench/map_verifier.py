"""Fit the map's logistic models on whole labelled reports (cross-validated by report) and measure each stage: the
selector, the verifier and the behaviour gate (pipeline/training/verifier.py) under noisy-or and under the
report-level decision (serving/mapping/decision.py, its coefficients for search.yaml); `--selector` fits the
selector itself (search.yaml map.selector) instead, `--train-encoder STEPS` fine-tunes the sentence model's encoder
from its base for that many steps (its time per step and peak memory).
"""

from __future__ import annotations

import argparse
import math
import resource
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from map import scores, summary

from serving.mapping.decision import features as decision_features
from serving.mapping.selector import features, probability
from serving.mapping.sentences import Sentence, split
from serving.search.search_file import DECISION_FEATURES, MAP_FEATURES

from lib.api import in_process
from lib.queries import EVAL, load_items
from lib.relevance import ndcg, precision_at_1

SWEEP = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7)
REPORTS, SENTENCES, FOLDS = EVAL / "cti_dev_reports.jsonl", EVAL / "cti_dev_queries.jsonl", 5  # folds by report
Found = dict[int, dict[str, float]]  # report -> technique -> score


def evidence(searcher: Any, sentences: list[Sentence], voters: int, top: int) -> Any:  # noqa: ANN401
    from serving.mapping.held_path import held_evidence

    for _ in range(600):
        found = held_evidence(searcher, sentences, voters=voters, top=top)
        if found is not None:
            return found
        time.sleep(0.5)
    raise SystemExit("no sentence model serves, or its vectors were not held within 5 minutes")


def train(url: str, steps: int) -> None:
    """Train the promoted sentence model's verifier or, given `steps`, fine-tune the sentence model's encoder from its
    base for that many steps: the time it took and the peak memory."""
    from pipeline.training.examples import read_labelled
    from pipeline.training.fine_tune import Recipe, fine_tune
    from pipeline.training.verifier import train_promoted_verifier
    from secrag.db import database
    from secrag.models.encoders import document_encoder
    from secrag.models.registry import model_info
    from secrag.models.weights import weights_dir
    from secrag.settings import get_settings

    settings, started, outcome = get_settings(), time.monotonic(), None
    encoders = lambda m: document_encoder(m, batch_size=64, threads=2, cache_dir=settings.models_dir)  # noqa: E731
    with database.connect(url, autocommit=True) as conn:
        if steps:
            pairs = read_labelled(conn, settings.sql_dir).pairs()
        else:
            progress = lambda line: print(f"  {line}", flush=True)  # noqa: E731, T201
            outcome = train_promoted_verifier(conn, settings.sql_dir, settings.models_dir, encoders, progress=progress)
    if steps:
        base, started = weights_dir(model_info("all-MiniLM-L6-v2"), settings.models_dir), time.monotonic()
        step_progress = lambda s, n, loss: print(f"step {s}/{n} loss {loss:.3f}", flush=True)  # noqa: E731, T201
        fine_tune(base, pairs, Recipe(steps=steps), Path(".secrag/bench/trained"), progress=step_progress)
    seconds, peak = time.monotonic() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    a_step = f", {seconds / steps:.2f} s a step" if steps else ""
    print(f"training: {seconds:.1f} s{a_step}, peak RSS {peak:.0f} MiB")  # noqa: T201
    if outcome is not None:
        print(f"  kept: {outcome.passed} -> {outcome.written}\n  figures: {outcome.figures}")  # noqa: T201


def rows_of(searcher: Any, reports: list[dict[str, Any]], selector: Any, verifier: Any) -> list[dict[str, Any]]:  # noqa: ANN401
    """Per report, per sentence: gold techniques, gate score, its candidates and their selector and verifier
    scores."""
    out: list[dict[str, Any]] = []
    for r, report in enumerate(reports):
        sentences = split(report["text"])
        found = evidence(searcher, sentences, selector.voters, selector.top)
        gate = (
            verifier.gate.scores(found.vectors, [s.query for s in sentences])
            if verifier is not None and verifier.gate is not None
            else np.ones(len(sentences))
        )
        for s, (sentence, cands) in enumerate(zip(sentences, found.candidates, strict=True)):
            out.append(
                {
                    "report": r,
                    "sentences": len(sentences),
                    "gold": {
                        a["technique"]
                        for a in report["annotations"]
                        if a["start"] < sentence.end and sentence.start < a["end"]
                    },
                    "gate": float(gate[s]),
                    "named": any(c.named for c in cands),
                    "cands": cands,
                    "selector": [probability(c, selector.intercept, selector.weights) for c in cands],
                    "verifier": list(verifier.scores(cands)) if verifier is not None and cands else [],
                }
            )
    return out


def per_report(
    rows: list[dict[str, Any]], key: str, floor: float, gate: float | None
) -> dict[int, dict[str, list[float]]]:
    """Per report, each technique's probabilities (a sentence's best) at or over the floor; sentences the gate
    scores under `gate` (None: no gate) left out unless they write an id."""
    found: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if gate is not None and row["gate"] < gate and not row["named"]:
            continue
        best: dict[str, float] = {}
        for c, p in zip(row["cands"], row[key], strict=True):
            if p >= floor:
                best[c.technique] = max(best.get(c.technique, 0.0), float(p))
        for t, p in best.items():
            found[row["report"]][t].append(p)
    return found


def noisy_or(found: dict[int, dict[str, list[float]]]) -> Found:
    return {r: {t: 1.0 - math.prod(1.0 - p for p in ps) for t, ps in techs.items()} for r, techs in found.items()}


def decided(found: dict[int, dict[str, list[float]]], gold: dict[int, set[str]], lengths: dict[int, int],
            examples: dict[str, int] | None, folds: int) -> tuple[Found, Any]:  # fmt: skip
    """Each (report, technique)'s decision probability fitted on the other folds' reports, and the decision
    fitted on every report; without `examples` the prior features are 0."""
    from sklearn.linear_model import LogisticRegression

    rows = [
        (r, t, [x[f] for f in DECISION_FEATURES], int(t in gold[r]))
        for r, techs in found.items()
        for t, x in decision_features(techs, lengths[r], examples).items()
    ]
    fit = lambda part: LogisticRegression(C=1.0, max_iter=2000).fit([r[2] for r in part], [r[3] for r in part])  # noqa: E731
    out: Found = defaultdict(dict)
    for fold in range(folds):
        test = [row for row in rows if row[0] % folds == fold]
        if test:
            p = fit([row for row in rows if row[0] % folds != fold]).predict_proba([row[2] for row in test])[:, 1]
            for (r, t, _, _), q in zip(test, p, strict=True):
                out[r][t] = float(q)
    return out, fit(rows)


def prf(found: Found, gold: dict[int, set[str]], threshold: float) -> dict[str, float]:
    """Micro and macro P/R/F1 of the reports' techniques at or over threshold (map.py's)."""
    figures = summary([scores(found.get(r, {}), gold[r], threshold) for r in gold])
    return dict(zip(("P", "R", "F1", "macroP", "macroR", "macroF1"), figures, strict=True))


def curve(name: str, found: Found, gold: dict[int, set[str]]) -> None:
    best = max(SWEEP, key=lambda th: prf(found, gold, th)["F1"])
    print(f"{name} (best F1 at min_score {best}):")  # noqa: T201
    for threshold in SWEEP:
        f = prf(found, gold, threshold)
        print(f"  min_score {threshold:.2f}: " + "  ".join(f"{k} {v:.3f}" for k, v in f.items()))  # noqa: T201


def ranking(searcher: Any, items: list[dict[str, Any]], voters: int, top: int, scorers: dict[str, Any]) -> None:  # noqa: ANN401
    """The labelled sentences' candidates ranked by each scorer (candidates -> probabilities): nDCG@10, P@1."""
    sentences = [Sentence(text=i["query"], start=0, end=len(i["query"])) for i in items]
    found = evidence(searcher, sentences, voters, top)
    for name, score in scorers.items():
        n = p1 = 0.0
        for item, cands in zip(items, found.candidates, strict=True):
            order = sorted(zip(cands, score(cands) if cands else [], strict=True), key=lambda cp: -cp[1])
            ranked = [f"mitre_attack:{c.technique}" for c, _ in order]
            grades = {r["doc_id"]: int(r["grade"]) for r in item["relevant"]}
            n += ndcg(ranked, grades)
            p1 += precision_at_1(ranked, grades)
        print(f"labelled sentences ranked by the {name}: nDCG@10 {n / len(items):.4f} P@1 {p1 / len(items):.4f}")  # noqa: T201


def fit_selector(rows: list[dict[str, Any]], gold: dict[int, set[str]], floor: float, folds: int) -> Any:  # noqa: ANN401
    """search.yaml map.selector fitted on every sentence's candidates, labelled by the annotations overlapping it:
    its curve cross-validated by report (noisy-or), and the selector fitted on every report."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray([[features(c)[f] for f in MAP_FEATURES] for row in rows for c in row["cands"]])
    y = np.asarray([c.technique in row["gold"] for row in rows for c in row["cands"]], dtype=int)
    report = np.asarray([row["report"] for row in rows for _ in row["cands"]])
    named = np.asarray([c.named for row in rows for c in row["cands"]])
    print(f"{len(y)} candidates over {len(gold)} reports, {int(y.sum())} annotated")  # noqa: T201
    p = np.zeros(len(y))
    for fold in range(folds):
        test = report % folds == fold
        p[test] = LogisticRegression(C=1.0, max_iter=2000).fit(x[~test], y[~test]).predict_proba(x[test])[:, 1]
    p = np.where(named, 1.0, p)
    at = 0
    for row in rows:
        row["fitted"], at = list(p[at : at + len(row["cands"])]), at + len(row["cands"])
    found = noisy_or(per_report(rows, "fitted", floor, None))
    curve(f"selector cross-validated by report, floor {floor}, noisy-or", found, gold)
    return LogisticRegression(C=1.0, max_iter=2000).fit(x, y)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--train", action="store_true", help="train the verifier of the promoted sentence model first")
    ap.add_argument("--floor", type=float, default=None, help="default: search.yaml map.selector.floor")
    ap.add_argument("--prior", action="store_true", help="also the decision with each technique's prior in the store")
    ap.add_argument("--selector", action="store_true", help="fit the selector (search.yaml map.selector) instead")
    ap.add_argument("--train-encoder", type=int, metavar="STEPS", help="only fine-tune the encoder for STEPS steps")
    args = ap.parse_args()
    if args.train_encoder or args.train:
        train(args.database_url, args.train_encoder or 0)
    if args.train_encoder:
        return 0
    with in_process(args.database_url) as api:
        return measure(api.app.state.service.model.current(), args)


def measure(searcher: Any, args: argparse.Namespace) -> int:  # noqa: ANN401 - the in-process API's Searcher
    """Each stage's curves on the reports, and the labelled sentences ranked by each scorer."""
    from serving.mapping.verifier_file import verifier_of

    selector = searcher.config.map.selector
    floor = selector.floor if args.floor is None else args.floor
    reports = load_items(REPORTS)
    model_id = evidence(searcher, [Sentence(0, 5, "probe")], selector.voters, selector.top).model_id
    verifier = None if args.selector else verifier_of(model_id)
    print(f"sentence model {model_id}; verifier: {verifier.figures if verifier else None}")  # noqa: T201
    gold = {i: set(r["techniques"]) for i, r in enumerate(reports)}
    rows = rows_of(searcher, reports, selector, verifier)
    items = load_items(SENTENCES) if SENTENCES.exists() else []
    scorers = {"selector": lambda cands: [probability(c, selector.intercept, selector.weights) for c in cands]}
    if args.selector:
        model = fit_selector(rows, gold, floor, FOLDS)
        weights = ", ".join(f"{f}: {w:.4f}" for f, w in zip(MAP_FEATURES, model.coef_[0], strict=True))
        print(f"  map.selector: {{intercept: {model.intercept_[0]:.4f}, weights: {{{weights}}}}}")  # noqa: T201
        fitted = lambda cands: model.predict_proba([[features(c)[f] for f in MAP_FEATURES] for c in cands])[:, 1]  # noqa: E731
        scorers = {"fitted selector": fitted}
    examples = searcher.catalog.technique_examples() if args.prior else None
    lengths = {row["report"]: row["sentences"] for row in rows}
    threshold = verifier.gate.threshold if verifier is not None and verifier.gate is not None else None
    stages = [("selector", "selector", None)]
    if verifier is not None:
        stages += [("verifier", "verifier", None), ("gate + selector", "selector", threshold)]
        stages += [("gate + verifier", "verifier", threshold)]
        scorers["verifier"] = lambda cands: list(verifier.scores(cands))
    for name, key, gate in stages if not args.selector else []:
        found = per_report(rows, key, floor, gate)
        if gate is not None:
            aside = [row for row in rows if row["gate"] < gate and not row["named"]]
            annotated = sum(1 for r in aside if r["gold"])
            print(f"{name}: {len(aside)} of {len(rows)} sentences set aside, {annotated} annotated")  # noqa: T201
        curve(f"{name}, noisy-or", noisy_or(found), gold)
        for label, prior in [("decision", None)] + ([("decision + prior", examples)] if examples is not None else []):
            cross, model = decided(found, gold, lengths, prior, FOLDS)
            curve(f"{name}, {label} (cross-validated by report)", cross, gold)
            weights = ", ".join(f"{f}: {w:.4f}" for f, w in zip(DECISION_FEATURES, model.coef_[0], strict=True))
            print(f"  map.{label}: {{intercept: {model.intercept_[0]:.4f}, weights: {{{weights}}}}}")  # noqa: T201
    if items:
        ranking(searcher, items, selector.voters, selector.top, scorers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
