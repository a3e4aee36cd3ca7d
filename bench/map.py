"""POST /v1/map on whole reports, in process (`--database-url`) or over HTTP (`--url`): the latency of a
~2,000-word report at one client (the longest report's first sentences) and, per min_score of one request each
at min_score 0, micro and macro precision, recall and F1 of each report's techniques against the CTI dev set's
annotations, and the sentence precision (the share of (technique, supporting sentence) pairs whose sentence
overlaps an annotation of that technique). `--reports` reads whole reports (`text`, `techniques`, `annotations`
as offsets); `--queries` joins the annotated sentences of each `origin` of cti_dev_queries.jsonl into one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from lib.api import Client, api_settings
from lib.queries import EVAL, load_items

DEFAULT_QUERIES = EVAL / "cti_dev_queries.jsonl"
DEFAULT_REPORTS = EVAL / "cti_dev_reports.jsonl"
SWEEP = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
PREFIX = "mitre_attack:"

Span = tuple[int, int]  # text[start:end], end excluded
Annotation = tuple[int, int, str]  # (start, end, technique)


@dataclass(frozen=True)
class Report:
    """One text to map, the techniques annotated in it and where."""

    origin: str
    text: str
    relevant: frozenset[str]
    annotations: tuple[Annotation, ...]


@dataclass(frozen=True)
class Answer:
    """A report's map at min_score 0: each technique's score and its supporting sentences' spans."""

    scores: dict[str, float]
    supports: dict[str, tuple[Span, ...]]
    sentences: int
    unanswered: int
    omitted: int
    took_ms: float


def from_reports(items: list[dict[str, Any]]) -> list[Report]:
    """The reports of cti_dev_reports.jsonl as they are."""
    return [
        Report(
            origin=item["origin"],
            text=item["text"],
            relevant=frozenset(item["techniques"]),
            annotations=tuple((int(a["start"]), int(a["end"]), a["technique"]) for a in item["annotations"]),
        )
        for item in items
    ]


def from_queries(items: list[dict[str, Any]]) -> list[Report]:
    """One report per origin: its annotated sentences as one text, each an annotation of its grade-2 ids. The
    sentences are often fragments ("creates a scheduled task"): each gets a capital and a full stop, as a
    report's sentences have, so that the text splits where they do."""
    texts: dict[str, str] = {}
    annotations: dict[str, list[Annotation]] = defaultdict(list)
    for item in items:
        sentence = " ".join(item["query"].split())
        sentence = sentence[:1].upper() + sentence[1:]
        sentence = sentence if sentence[-1:] in ".!?" else sentence + "."
        text = texts.get(item["origin"])
        start = 0 if text is None else len(text) + 1
        texts[item["origin"]] = sentence if text is None else f"{text} {sentence}"
        for r in item["relevant"]:
            if int(r.get("grade", 1)) == 2:
                annotations[item["origin"]].append((start, start + len(sentence), r["doc_id"].removeprefix(PREFIX)))
    return [
        Report(origin, text, frozenset(a[2] for a in annotations[origin]), tuple(annotations[origin]))
        for origin, text in texts.items()
    ]


def long_text(reports: Sequence[Report], words: int) -> str:
    """The largest reports joined, paragraph by paragraph, until the text has `words` words (cut there)."""
    picked: list[str] = []
    count = 0
    for report in sorted(reports, key=lambda r: -len(r.text.split())):
        picked.append(report.text)
        count += len(report.text.split())
        if count >= words:
            break
    return "\n\n".join(picked) if count <= words else " ".join(" ".join(picked).split()[:words])


def leading_text(text: str, ends: Sequence[int], words: int) -> str:
    """The text up to the first of its sentence `ends` (offsets, in order) with at least `words` words before
    it; the whole text when it is shorter."""
    count, previous = 0, 0
    for end in ends:
        count += len(text[previous:end].split())
        previous = end
        if count >= words:
            return text[:end]
    return text


def answer_of(body: dict[str, Any]) -> Answer:
    """The parts of a POST /v1/map response that are scored."""
    techniques = body["techniques"]
    return Answer(
        scores={t["technique_id"]: float(t["score"]) for t in techniques},
        supports={
            t["technique_id"]: tuple((int(s["start"]), int(s["end"])) for s in t["sentences"]) for t in techniques
        },
        sentences=int(body["sentences"]),
        unanswered=len(body.get("unanswered") or []),
        omitted=int(body.get("omitted", 0)),
        took_ms=float(body.get("took_ms", 0.0)),
    )


def with_parents(
    scores: Mapping[str, float], supports: Mapping[str, Sequence[Span]]
) -> tuple[dict[str, float], dict[str, tuple[Span, ...]]]:
    """Each sub-technique's parent found too: scored as its best sub-technique (or its own score, when higher)
    and supported by its own sentences and its sub-techniques'."""
    out_scores = dict(scores)
    out_supports: dict[str, tuple[Span, ...]] = {t: tuple(s) for t, s in supports.items()}
    for technique, score in scores.items():
        if "." in technique:
            parent = technique.split(".")[0]
            out_scores[parent] = max(out_scores.get(parent, 0.0), score)
            spans = out_supports.get(parent, ()) + tuple(supports.get(technique, ()))
            out_supports[parent] = tuple(sorted(set(spans)))
    return out_scores, out_supports


def kept(scores: Mapping[str, float], threshold: float) -> set[str]:
    """The techniques at or over threshold."""
    return {t for t, s in scores.items() if s >= threshold}


def scores(found: Mapping[str, float], relevant: Set[str], threshold: float) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) of the techniques at or over threshold."""
    predicted = kept(found, threshold)
    return len(predicted & relevant), len(predicted - relevant), len(relevant - predicted)


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall and F1; each 0 when undefined (nothing found, nothing relevant)."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def summary(per_report: Sequence[tuple[int, int, int]]) -> tuple[float, float, float, float, float, float]:
    """Micro P/R/F1 (counts summed over reports) and macro P/R/F1 (mean of the reports')."""
    micro = prf(*(sum(x[i] for x in per_report) for i in range(3)))
    each = [prf(*x) for x in per_report]
    macro = tuple(statistics.fmean(e[i] for e in each) for i in range(3))
    return (*micro, *macro)  # type: ignore[return-value]


def overlaps(a: Span, b: Span) -> bool:
    """Whether two spans share a character (spans that only touch do not)."""
    return a[0] < b[1] and b[0] < a[1]


def overlapping(supports: Mapping[str, Sequence[Span]], annotations: Sequence[Annotation]) -> dict[str, list[bool]]:
    """For each technique of `supports`, whether each of its supporting sentences overlaps an annotation of that
    same technique."""
    annotated: dict[str, list[Span]] = defaultdict(list)
    for start, end, technique in annotations:
        annotated[technique].append((start, end))
    return {
        t: [any(overlaps(span, a) for a in annotated.get(t, ())) for span in spans] for t, spans in supports.items()
    }


def sentence_hits(supports: Mapping[str, Sequence[Span]], annotations: Sequence[Annotation]) -> tuple[int, int]:
    """(pairs whose sentence overlaps an annotation of that technique, pairs) over the (technique, supporting
    sentence) pairs of `supports`."""
    marks = overlapping(supports, annotations)
    return sum(sum(m) for m in marks.values()), sum(len(m) for m in marks.values())


def supports_at(answer: Answer, threshold: float) -> dict[str, tuple[Span, ...]]:
    """The supporting sentences of the techniques at or over threshold."""
    return {t: spans for t, spans in answer.supports.items() if answer.scores.get(t, 0.0) >= threshold}


def ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def figures(
    reports: Sequence[Report], answers: Mapping[str, Answer], thresholds: Sequence[float], default: float
) -> dict[str, Any]:
    """The sweep (per min_score: micro and macro P/R/F1 of the technique sets, sentence precision) and each
    report's figures at the default min_score."""
    sweep = []
    for threshold in sorted({*thresholds, default}):
        per_report = [scores(answers[r.origin].scores, r.relevant, threshold) for r in reports]
        hits = [sentence_hits(supports_at(answers[r.origin], threshold), r.annotations) for r in reports]
        right, pairs = sum(h[0] for h in hits), sum(h[1] for h in hits)
        micro_p, micro_r, micro_f, macro_p, macro_r, macro_f = summary(per_report)
        sweep.append(
            {
                "min_score": threshold,
                "default": threshold == default,
                "micro": {"precision": micro_p, "recall": micro_r, "f1": micro_f},
                "macro": {"precision": macro_p, "recall": macro_r, "f1": macro_f},
                "techniques": sum(tp + fp for tp, fp, _ in per_report),
                "sentence_precision": ratio(right, pairs),
                "pairs": pairs,
                "pairs_right": right,
            }
        )
    return {
        "default_min_score": default,
        "sweep": sweep,
        "reports": [per_report_figures(r, answers[r.origin], default) for r in reports],
    }


def per_report_figures(report: Report, answer: Answer, default: float) -> dict[str, Any]:
    """One report's figures at the default min_score, its techniques there with their sentences (each marked
    when it overlaps an annotation of the technique), and every technique's score at min_score 0."""
    tp, fp, fn = scores(answer.scores, report.relevant, default)
    p, r, f = prf(tp, fp, fn)
    at = {t: answer.supports.get(t, ()) for t in kept(answer.scores, default)}
    right, pairs = sentence_hits(at, report.annotations)
    marks = overlapping(at, report.annotations)
    returned = [
        {
            "technique": t,
            "score": answer.scores[t],
            "annotated": t in report.relevant,
            "sentences": [[start, end, mark] for (start, end), mark in zip(at[t], marks[t], strict=True)],
        }
        for t in sorted(at, key=lambda t: (-answer.scores[t], t))
    ]
    return {
        "origin": report.origin,
        "sentences": answer.sentences,
        "unanswered": answer.unanswered,
        "omitted": answer.omitted,
        "took_ms": answer.took_ms,
        "annotations": len(report.annotations),
        "relevant": sorted(report.relevant),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": p,
        "recall": r,
        "f1": f,
        "pairs": pairs,
        "pairs_right": right,
        "sentence_precision": ratio(right, pairs),
        "returned": returned,
        "found": dict(sorted(answer.scores.items())),
    }


def map_text(http: Client, text: str, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    response = http.post("/v1/map", json={"text": text, "layer": False, **body})
    if response.status_code != 200:
        raise SystemExit(f"POST /v1/map answered {response.status_code}: {response.text[:500]}")
    return response.json()  # type: ignore[no-any-return]


def search_each(http: Client, text: str) -> list[float]:
    """Milliseconds of each of the text's sentences searched alone as a map searches it (what the map's
    concurrency and single encoder run save)."""
    from serving.mapping.sentences import split

    timings = []
    for sentence in split(text):
        body = {
            "query": sentence.query,
            "k": 10,
            "filters": {"sources": ["mitre_attack"]},
            "return": {"snippets": False},
        }
        started = time.perf_counter()
        response = http.post("/v1/search", json=body)
        timings.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"POST /v1/search answered {response.status_code}: {response.text[:500]}")
    return timings


def latency_text(reports: Sequence[Report], source: str, words: int) -> str:
    """The latency report: the first ~`words` words of the longest report, cut at a sentence end as the map
    splits it (--reports), or the largest reports joined (--queries, whose reports are short)."""
    if source == "queries":
        return long_text(reports, words)
    from serving.mapping.sentences import split

    longest = max(reports, key=lambda r: len(r.text.split())).text
    return leading_text(longest, [s.end for s in split(longest)], words)


def latency(http: Client, text: str, runs: int) -> dict[str, Any]:
    """The text mapped `runs` times at one client (after a first request that loads the per-process caches),
    and its sentences searched one by one for comparison."""
    map_text(http, "A first request loads what the API caches per process.")
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = map_text(http, text)
        timings.append((time.perf_counter() - started) * 1000)
    alone = search_each(http, text)
    return {
        "words": len(text.split()),
        "sentences": answer["sentences"],
        "techniques": len(answer["techniques"]),
        "min_score": float(answer["min_score"]),
        "runs_ms": timings,
        "p50_ms": statistics.median(timings),
        "min_ms": min(timings),
        "max_ms": max(timings),
        "took_ms": answer["took_ms"],
        "one_by_one": {"searches": len(alone), "total_ms": sum(alone), "p50_ms": statistics.median(alone)},
    }


def run(http: Client, args: argparse.Namespace, source: str, path: Path, limit: int) -> dict[str, Any]:
    """Every figure of the run (see the module docstring)."""
    items = load_items(path)
    reports = from_reports(items) if source == "reports" else from_queries(items)
    timed = latency(http, latency_text(reports, source, args.words), args.runs)
    answers: dict[str, Answer] = {}
    for report in reports:
        answer = answer_of(map_text(http, report.text, min_score=0, limit=limit))
        if args.with_parents:
            found, supports = with_parents(answer.scores, answer.supports)
            answer = replace(answer, scores=found, supports=supports)
        answers[report.origin] = answer
    ordered = sorted(reports, key=lambda r: r.origin)
    result = {
        "source": source,
        "file": str(path),
        "api": "in process" if args.database_url else args.url,
        "limit": limit,
        "with_parents": args.with_parents,
        "latency": timed,
        **figures(ordered, answers, args.sweep, timed["min_score"]),
    }
    if args.calibrate:
        result["calibration"] = calibrate(
            http, load_items(DEFAULT_QUERIES if source == "reports" else path), args.ranks
        )
    return result


def calibrate(http: Client, items: list[dict[str, Any]], ranks: int) -> dict[str, Any]:
    """Per rank, the share of dev sentences whose technique at that rank is one of the sentence's own."""
    right = [0] * ranks
    seen = [0] * ranks
    for item in items:
        text = " ".join(item["query"].split())
        relevant = {r["doc_id"].removeprefix(PREFIX) for r in item["relevant"] if int(r.get("grade", 1)) == 2}
        answer = map_text(http, text[:1].upper() + text[1:], min_score=0, limit=ranks * 4)
        for technique in answer["techniques"]:
            rank = min(s["rank"] for s in technique["sentences"])
            if rank <= ranks:
                seen[rank - 1] += 1
                right[rank - 1] += technique["technique_id"] in relevant
    precision = [r / n if n else None for r, n in zip(right, seen, strict=True)]
    return {"sentences": len(items), "rank_precision": precision, "seen": seen}


def render(result: dict[str, Any]) -> None:
    """The run's tables."""
    timed, default = result["latency"], result["default_min_score"]
    print(
        f"latency, 1 client: a report of {timed['words']} words, {timed['sentences']} sentences, "
        f"{timed['techniques']} techniques at min_score {default}: p50 {timed['p50_ms']:.0f} ms, "
        f"min {timed['min_ms']:.0f} ms, max {timed['max_ms']:.0f} ms over {len(timed['runs_ms'])} runs "
        f"(API's took_ms {timed['took_ms']:.0f})"
    )
    alone = timed["one_by_one"]
    print(
        f"the same sentences searched one by one (POST /v1/search as the map asks it, 1 client): "
        f"{alone['total_ms']:.0f} ms in all, p50 {alone['p50_ms']:.1f} ms"
    )
    print(f"\n{len(result['reports'])} reports of {result['file']} ({result['source']} mode)")
    print(f"per report at the default min_score {default}:")
    print(f"{'report':<48} {'sent':>4} {'ann':>4} {'rel':>4} {'found':>5} {'P':>6} {'R':>6} {'F1':>6} {'sentP':>6}")
    for row in result["reports"]:
        name = row["origin"].removeprefix("tram2:").removesuffix(".mjson")[:48]
        print(
            f"{name:<48} {row['sentences']:>4} {row['annotations']:>4} {len(row['relevant']):>4} "
            f"{row['tp'] + row['fp']:>5} {row['precision']:>6.3f} {row['recall']:>6.3f} {row['f1']:>6.3f} "
            f"{row['sentence_precision']:>6.3f}"
        )
    columns = ("micro P", "micro R", "micro F1", "macro P", "macro R", "macro F1", "sent P")
    print(f"\n{'min_score':>9} " + " ".join(f"{c:>8}" for c in columns))
    for row in result["sweep"]:
        values = (*row["micro"].values(), *row["macro"].values(), row["sentence_precision"])
        cells = " ".join(f"{v:>8.3f}" for v in values)
        print(f"{row['min_score']:>9.2f} {cells}{'   (default)' if row['default'] else ''}")
    at = next(row for row in result["sweep"] if row["default"])
    tp = sum(r["tp"] for r in result["reports"])
    print(
        f"\nat the default min_score {default}: technique precision {at['micro']['precision']:.3f} "
        f"({tp} of {at['techniques']} returned techniques annotated in their report); sentence precision "
        f"{at['sentence_precision']:.3f} ({at['pairs_right']} of {at['pairs']} (technique, supporting sentence) "
        f"pairs overlap an annotation of that technique)"
    )
    unanswered = [r for r in result["reports"] if r["unanswered"]]
    if unanswered:
        print(
            f"{sum(r['unanswered'] for r in unanswered)} sentences of {len(unanswered)} reports went unanswered "
            f"(timeouts or failed searches): their techniques are missing"
        )
    omitted = [r for r in result["reports"] if r["omitted"]]
    if omitted:
        print(f"{len(omitted)} reports had techniques cut by the limit {result['limit']}: low min_score rows miss them")
    if "calibration" in result:
        calibration = result["calibration"]
        print(f"\nrank precision over {calibration['sentences']} dev sentences (search.yaml map.rank_precision):")
        print("  " + ", ".join(f"{p:.3f}" if p is not None else "-" for p in calibration["rank_precision"]))
        print("  sentences with a technique at each rank: " + ", ".join(map(str, calibration["seen"])))


def source_of(args: argparse.Namespace) -> tuple[str, Path]:
    """("reports" | "queries", its file): the flag given, else the shared reports file when it exists."""
    if args.queries:
        return "queries", args.queries
    if args.reports:
        return "reports", args.reports
    return ("reports", DEFAULT_REPORTS) if DEFAULT_REPORTS.is_file() else ("queries", DEFAULT_QUERIES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--reports", type=Path, nargs="?", const=DEFAULT_REPORTS, default=None, help="Whole reports (the default)."
    )
    source.add_argument(
        "--queries", type=Path, nargs="?", const=DEFAULT_QUERIES, default=None, help="Annotated sentences joined."
    )
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--database-url", default=None, help="Run the API in process on this store (caches off).")
    parser.add_argument(
        "--search-config", type=Path, default=None, help="An operator's search.yaml laid over the shipped one."
    )
    parser.add_argument("--words", type=int, default=2000, help="Words of the latency report.")
    parser.add_argument("--runs", type=int, default=5, help="Timed maps of the latency report.")
    parser.add_argument(
        "--sweep", type=lambda s: [float(x) for x in s.split(",")], default=list(SWEEP), help="min_score values."
    )
    parser.add_argument("--with-parents", action="store_true", help="A sub-technique found counts for its parent.")
    parser.add_argument("--calibrate", action="store_true", help="Also the precision of each rank's vote.")
    parser.add_argument("--ranks", type=int, default=3, help="Ranks --calibrate measures (map.rank_precision's).")
    parser.add_argument("--save", type=Path, default=None, help="Write every figure of the run here as JSON.")
    parser.add_argument("--json", action="store_true", help="Print every figure as JSON instead of the tables.")
    args = parser.parse_args()
    kind, path = source_of(args)
    if args.database_url:
        from fastapi.testclient import TestClient

        from serving.api.app import create_app

        settings = api_settings(args.database_url, args.search_config).model_copy(update={"map_max_techniques": 500})
        with TestClient(create_app(settings)) as api:
            result = run(api, args, kind, path, limit=500)
    else:
        headers = {"X-API-Key": args.api_key} if args.api_key else {}
        with httpx.Client(base_url=args.url, timeout=120, headers=headers) as http:
            result = run(http, args, kind, path, limit=100)  # the default SECRAG_MAP_MAX_TECHNIQUES
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(result, indent=1))
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        render(result)


if __name__ == "__main__":
    main()
