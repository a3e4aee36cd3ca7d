"""Fit the map's logistic models on whole labelled reports (cross-validated by report) and measure each stage:
by default the verifier and behaviour gate (pipeline/training/verifier.py) against the selector, noisy-or against
the report-level decision (serving/mapping/decision.py, its coefficients for search.yaml); `--selector` fits the
selector itself (search.yaml map.selector) instead.

`--train-encoder STEPS` fine-tunes the sentence model's encoder from its base (pipeline/training/fine_tune.py) for
that many steps instead, and prints its time per step and peak memory.
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
from serving.search.search_file import DECISION_FEATURES
from serving.search.search_file import MAP_FEATURES as FEATURES

from lib.api import api_settings
from lib.queries import EVAL, load_items
from lib.relevance import ndcg, precision_at_1

SWEEP = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7)


def evidence(searcher: Any, sentences: list[Sentence], voters: int, top: int) -> Any:  # noqa: ANN401
    from serving.mapping.held_path import held_evidence

    for _ in range(600):
        found = held_evidence(searcher, sentences, voters=voters, top=top)
        if found is not None:
            return found
        time.sleep(0.5)
    raise SystemExit("no sentence model serves, or its vectors were not held within 5 minutes")


def searcher_of(url: str, sentence_model: str | None) -> Any:  # noqa: ANN401 - the in-process API's Searcher
    from fastapi.testclient import TestClient

    from serving.api.app import create_app

    settings = api_settings(url)
    if sentence_model:
        settings = settings.model_copy(update={"sentence_model": sentence_model})
    client = TestClient(create_app(settings))
    client.__enter__()
    return client.app.state.service.model.current()  # type: ignore[attr-defined]


def train_encoder(url: str, steps: int, out: Path) -> None:
    from pipeline.training.examples import read_labelled
    from pipeline.training.fine_tune import Recipe, fine_tune
    from secrag.db import database
    from secrag.models.registry import model_info
    from secrag.models.weights import weights_dir
    from secrag.settings import get_settings

    settings = get_settings()
    with database.connect(url, autocommit=True) as conn:
        data = read_labelled(conn, settings.sql_dir)
    base = weights_dir(model_info("all-MiniLM-L6-v2"), settings.models_dir)
    started = time.monotonic()
    progress = lambda s, n, loss: print(f"step {s}/{n} loss {loss:.3f}", flush=True)  # noqa: E731, T201
    fine_tune(base, data.pairs(), Recipe(steps=steps), out, progress=progress)
    seconds, peak = time.monotonic() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"training: {seconds / steps:.2f} s a step, peak RSS {peak:.0f} MiB")  # noqa: T201


def train(url: str, pinned: str | None, models_dir: Path | None) -> None:
    """Train the verifier of the promoted sentence model, or of a `pinned` one that is not promoted (a dry run)."""
    from pipeline.training.verifier import train_promoted_verifier, train_verifier
    from secrag.db import database
    from secrag.models.encoders import document_encoder
    from secrag.settings import get_settings
    from serving.mapping.verifier_file import folder_of

    settings = get_settings()
    encoders = lambda m: document_encoder(m, batch_size=64, threads=2, cache_dir=settings.models_dir)  # noqa: E731
    progress = lambda line: print(f"  {line}", flush=True)  # noqa: E731, T201
    started = time.monotonic()
    with database.connect(url, autocommit=True) as conn:
        if pinned:
            folder = folder_of(pinned, models_dir)
            folder.mkdir(parents=True, exist_ok=True)
            outcome = train_verifier(conn, settings.sql_dir, folder, pinned, encoders(pinned), progress=progress)
        else:
            outcome = train_promoted_verifier(conn, settings.sql_dir, settings.models_dir, encoders, progress=progress)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"training: {time.monotonic() - started:.1f} s, peak RSS {peak:.0f} MiB")  # noqa: T201
    if outcome is not None:
        print(f"  kept: {outcome.passed} -> {outcome.written}\n  figures: {outcome.figures}")  # noqa: T201


def rows_of(searcher: Any, reports: list[dict[str, Any]], selector: Any, verifier: Any) -> list[dict[str, Any]]:  # noqa: ANN401
    """Per report, per sentence: gold techniques, gate score, and its candidates' selector and verifier scores."""
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
            gold = {
                a["technique"] for a in report["annotations"] if a["start"] < sentence.end and sentence.start < a["end"]
            }
            out.append(
                {
                    "report": r,
                    "sentences": len(sentences),
                    "gold": gold,
                    "gate": float(gate[s]),
                    "named": any(c.named for c in cands),
                    "cands": [c.technique for c in cands],
                    "selector": [probability(c, selector.intercept, selector.weights) for c in cands],
                    "verifier": list(verifier.scores(cands)) if verifier is not None and cands else [],
                }
            )
    return out


def per_report(
    rows: list[dict[str, Any]], key: str, floor: float, threshold: float | None
) -> dict[int, dict[str, list[float]]]:
    """Per report, each technique's probabilities (a sentence's best) at or over the floor; sentences the gate
    scores under `threshold` (None: no gate) left out unless they write an id."""
    found: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if threshold is not None and row["gate"] < threshold and not row["named"]:
            continue
        best: dict[str, float] = {}
        for t, p in zip(row["cands"], row[key], strict=True):
            if p >= floor:
                best[t] = max(best.get(t, 0.0), float(p))
        for t, p in best.items():
            found[row["report"]][t].append(p)
    return found


def noisy_or(found: dict[int, dict[str, list[float]]]) -> dict[int, dict[str, float]]:
    return {r: {t: 1.0 - math.prod(1.0 - p for p in ps) for t, ps in techs.items()} for r, techs in found.items()}


def technique_examples(url: str) -> dict[str, int]:
    """Each technique's procedure examples in the store (never the eval files), the decision's prior, read as the
    API reads it."""
    from secrag.attack_domains import PROCEDURE_SOURCES
    from secrag.db import database
    from secrag.db.queries import Queries
    from secrag.settings import get_settings

    q = Queries(get_settings().sql_dir, "serving")
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute(q.technique_examples, {"procedure_sources": list(PROCEDURE_SOURCES.values())}).fetchall()
    return {str(t): int(n) for t, n in rows}


def decision_rows(
    found: dict[int, dict[str, list[float]]],
    gold: dict[int, set[str]],
    lengths: dict[int, int],
    examples: dict[str, int] | None = None,
) -> list[tuple[int, str, list[float], int]]:
    """The decision's features per (report, technique); without `examples` the prior features are 0."""
    out = []
    for r, techs in found.items():
        values = decision_features(techs, lengths[r], examples)
        for t, x in values.items():
            out.append((r, t, [x[f] for f in DECISION_FEATURES], int(t in gold[r])))
    return out


def with_prior(
    found: dict[int, dict[str, float]], examples: dict[str, int], power: float
) -> dict[int, dict[str, float]]:
    """Each noisy-or score times the technique's prior over the store's largest, to the `power`."""
    top = math.log1p(max(examples.values(), default=1))
    return {
        r: {t: s * (math.log1p(examples.get(t, 0)) / top) ** power for t, s in techs.items()}
        for r, techs in found.items()
    }


def fit_decision(rows: list[tuple[int, str, list[float], int]]) -> Any:  # noqa: ANN401
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0, max_iter=2000).fit([r[2] for r in rows], [r[3] for r in rows])


def decided(rows: list[tuple[int, str, list[float], int]], folds: int) -> dict[int, dict[str, float]]:
    """Each (report, technique)'s decision probability, fitted on the other folds' reports."""
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for fold in range(folds):
        model = fit_decision([r for r in rows if r[0] % folds != fold])
        test = [r for r in rows if r[0] % folds == fold]
        if test:
            for (r, t, _, _), p in zip(test, model.predict_proba([x[2] for x in test])[:, 1], strict=True):
                out[r][t] = float(p)
    return out


def curve(name: str, found: dict[int, dict[str, float]], gold: dict[int, set[str]], everyone: list[int]) -> None:
    best = max(SWEEP, key=lambda th: prf(found, gold, everyone, th)["F1"])
    print(f"{name} (best F1 at min_score {best}):")  # noqa: T201
    for threshold in SWEEP:
        f = prf(found, gold, everyone, threshold)
        print(f"  min_score {threshold:.2f}: " + "  ".join(f"{k} {v:.3f}" for k, v in f.items()))  # noqa: T201


def outside(found: dict[int, dict[str, float]], gold: dict[int, set[str]], threshold: float) -> str:
    """How many wrong techniques at `threshold` are annotated in no report at all (TRAM annotates a fixed set)."""
    space = set().union(*gold.values())
    wrong = [t for r, techs in found.items() for t, s in techs.items() if s >= threshold and t not in gold[r]]
    return f"{len(wrong)} wrong at {threshold}, {sum(t not in space for t in wrong)} of them annotated in no report"


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
    """Micro and macro P/R/F1 of the reports' techniques at or over threshold (map.py's)."""
    figures = summary([scores(found.get(r, {}), gold[r], threshold) for r in reports])
    return dict(zip(("P", "R", "F1", "macroP", "macroR", "macroF1"), figures, strict=True))


def fit_selector(searcher: Any, reports: list[dict[str, Any]], items: list[dict[str, Any]], args: Any) -> None:  # noqa: ANN401
    """search.yaml map.selector fitted on every sentence's candidates, labelled by the annotations overlapping it:
    its cross-validated and in-sample curves, calibration by decile and the labelled sentences' ranking."""
    voters, top = args.voters, args.top
    gold = {i: set(r["techniques"]) for i, r in enumerate(reports)}
    rows: list[dict[str, Any]] = []
    for r, report in enumerate(reports):
        sentences = split(report["text"])
        for s, (sentence, cands) in enumerate(
            zip(sentences, evidence(searcher, sentences, voters, top).candidates, strict=True)
        ):
            labels = {
                a["technique"] for a in report["annotations"] if a["start"] < sentence.end and sentence.start < a["end"]
            }
            rows += [
                {
                    "report": r,
                    "sentence": s,
                    "technique": c.technique,
                    "x": features(c),
                    "y": c.technique in labels,
                    "named": c.named,
                }
                for c in cands
            ]
    print(f"{len(rows)} candidates over {len(reports)} reports, {sum(r['y'] for r in rows)} annotated")  # noqa: T201
    predicted = np.zeros(len(rows))
    for fold in range(args.folds):
        model = fit([row for row in rows if row["report"] % args.folds != fold])
        at = [i for i, row in enumerate(rows) if row["report"] % args.folds == fold]
        predicted[at] = probabilities(model, [rows[i] for i in at])
    everyone = list(range(len(reports)))
    for floor, best in ((args.floor, 0), (args.floor, 1), (args.floor, 2), (0.1, 2), (0.2, 0), (0.2, 2)):
        curve(
            f"cross-validated by report, floor {floor}, best {best or 'all'} sentences",
            report_scores(rows, predicted, floor, best),
            gold,
            everyone,
        )
    model = fit(rows)
    p = probabilities(model, rows)
    curve("fitted on every report (in-sample)", report_scores(rows, p, args.floor), gold, everyone)
    _, y = matrix(rows)
    print("calibration (deciles of the predicted probability: mean predicted, observed):")  # noqa: T201
    for part in np.array_split(np.argsort(p), 10):
        print(f"  {p[part].mean():.3f} {y[part].mean():.3f}")  # noqa: T201
    if items:
        ranking(
            searcher,
            items,
            voters,
            top,
            {
                "fitted selector": lambda cands: probabilities(
                    model, [{"x": features(c), "named": c.named} for c in cands]
                )
            },
        )
    weights = ", ".join(f"{f}: {w:.4f}" for f, w in zip(FEATURES, model.coef_[0], strict=True))
    print(f"search.yaml map.selector:\n  voters: {voters}\n  top: {top}\n  floor: {args.floor}")  # noqa: T201
    print(f"  intercept: {model.intercept_[0]:.4f}\n  weights: {{{weights}}}")  # noqa: T201


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--reports", type=Path, default=EVAL / "cti_dev_reports.jsonl")
    ap.add_argument("--sentences", type=Path, default=EVAL / "cti_dev_queries.jsonl")
    ap.add_argument("--train", action="store_true", help="train the verifier of the promoted sentence model first")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--sentence-model", default=None, help="pin the sentence model (default: the promoted one)")
    ap.add_argument("--models-dir", type=Path, default=None, help="where a pinned model's verifier.json is kept")
    ap.add_argument("--floor", type=float, default=0.05)
    ap.add_argument("--gate", type=float, nargs="*", help="behaviour gate thresholds to try (default: the trained one)")
    ap.add_argument(
        "--prior",
        action="store_true",
        help="also try each technique's prior from the store (its procedure examples): as decision features and "
        "multiplied into the noisy-or",
    )
    ap.add_argument("--selector", action="store_true", help="fit the selector (search.yaml map.selector) instead")
    ap.add_argument("--voters", type=int, default=20, help="with --selector: nearest examples voting per sentence")
    ap.add_argument("--top", type=int, default=5, help="with --selector: candidates kept per sentence")
    ap.add_argument("--train-encoder", type=int, metavar="STEPS", help="only fine-tune the encoder for STEPS steps")
    ap.add_argument("--out", type=Path, default=Path(".secrag/bench/trained"), help="with --train-encoder: its folder")
    args = ap.parse_args()
    if args.train_encoder:
        train_encoder(args.database_url, args.train_encoder, args.out)
        return 0
    if args.selector:
        searcher = searcher_of(args.database_url, args.sentence_model)
        items = load_items(args.sentences) if args.sentences.exists() else []
        fit_selector(searcher, load_items(args.reports), items, args)
        return 0
    if args.train:
        train(args.database_url, args.sentence_model, args.models_dir)
    from serving.mapping.verifier_file import verifier_of

    searcher = searcher_of(args.database_url, args.sentence_model)
    selector = searcher.config.map.selector
    reports = load_items(args.reports)
    probe = evidence(searcher, [Sentence(0, 5, "probe")], selector.voters, selector.top)
    verifier = verifier_of(probe.model_id, args.models_dir)
    print(f"sentence model {probe.model_id}; verifier: {verifier.figures if verifier else None}")  # noqa: T201
    gold = {i: set(r["techniques"]) for i, r in enumerate(reports)}
    everyone = list(range(len(reports)))
    rows = rows_of(searcher, reports, selector, verifier)
    examples = technique_examples(args.database_url) if args.prior else None
    lengths = {row["report"]: row["sentences"] for row in rows}
    threshold = verifier.gate.threshold if verifier is not None and verifier.gate is not None else None
    if threshold is not None:
        aside = [row for row in rows if row["gate"] < threshold and not row["named"]]
        annotated = [row for row in rows if row["gold"]]
        print(  # noqa: T201
            f"gate (threshold {threshold}): sets aside {len(aside)} of {len(rows)} sentences, "
            f"{sum(1 for row in aside if row['gold'])} of the {len(annotated)} annotated ones"
        )
    stages = [("selector", "selector", None)]
    if verifier is not None:
        stages += [("verifier", "verifier", None)]
        for gate in args.gate or [threshold]:
            stages += [
                (f"gate {gate:.3f} + selector", "selector", gate),
                (f"gate {gate:.3f} + verifier", "verifier", gate),
            ]
    for name, key, gate in stages:
        found = per_report(rows, key, args.floor, gate)
        if gate is not None:
            aside = [row for row in rows if row["gate"] < gate and not row["named"]]
            print(f"{name}: {len(aside)} sentences set aside, {sum(1 for r in aside if r['gold'])} annotated")  # noqa: T201
        curve(f"{name}, noisy-or", noisy_or(found), gold, everyone)
        print(f"  {outside(noisy_or(found), gold, searcher.config.map.min_score)}")  # noqa: T201
        if examples is not None:
            for power in (0.25, 0.5, 1.0):
                curve(f"{name}, noisy-or x prior^{power}", with_prior(noisy_or(found), examples, power), gold, everyone)
        for label, prior in [("decision", None)] + ([("decision + prior", examples)] if examples is not None else []):
            table = decision_rows(found, gold, lengths, prior)
            curve(f"{name}, {label} (cross-validated by report)", decided(table, args.folds), gold, everyone)
            model = fit_decision(table)
            weights = ", ".join(f"{f}: {w:.4f}" for f, w in zip(DECISION_FEATURES, model.coef_[0], strict=True))
            print(f"  map.{label}: {{intercept: {model.intercept_[0]:.4f}, weights: {{{weights}}}}}")  # noqa: T201
    if args.sentences.exists():
        scorers = {"selector": lambda cands: [probability(c, selector.intercept, selector.weights) for c in cands]}
        if verifier is not None:
            scorers["verifier"] = lambda cands: list(verifier.scores(cands))
        ranking(searcher, load_items(args.sentences), selector.voters, selector.top, scorers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
