"""POST /v1/map on whole reports: latency of a ~2,000-word report at one client, and technique-level precision
and recall per report against the CTI dev set's annotations.

    python bench/map.py --database-url postgresql://...   # the API in process on that store (caches off)
    python bench/map.py --url http://127.0.0.1:8000 [--api-key KEY]
        [--queries ../shared/eval/cti_dev_queries.jsonl] [--words 2000] [--runs 5] [--sweep 0.3,0.4,...]
        [--with-parents] [--calibrate]

A report is the sentences of one `origin` of the CTI dev set joined into one text (each with a capital and a
full stop); its relevant set is the union of its sentences' grade-2 ATT&CK ids. Each report is mapped
once with min_score 0 and the largest limit, so the sweep over min_score needs no further request; the table
is at the default min_score (the search config's map.min_score, as the API answers without one).
--with-parents also counts the parent of every sub-technique found, scored as its best sub-technique.
--calibrate maps each dev sentence alone and prints, per rank, the share of sentences whose technique at that
rank is right: the votes of search.yaml's map.rank_precision.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
from quality import Poster, api_settings, load_items

DEFAULT_QUERIES = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "cti_dev_queries.jsonl"
SWEEP = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
PREFIX = "mitre_attack:"


def reports(items: list[dict[str, Any]]) -> dict[str, tuple[str, set[str], int]]:
    """origin -> (its sentences as one text, its relevant technique ids, its sentence count). The annotated
    sentences are often fragments ("creates a scheduled task"): each gets a capital and a full stop, as a
    report's sentences have, so that the text splits where they do."""
    sentences: dict[str, list[str]] = defaultdict(list)
    relevant: dict[str, set[str]] = defaultdict(set)
    for item in items:
        text = " ".join(item["query"].split())
        text = text[:1].upper() + text[1:]
        sentences[item["origin"]].append(text if text[-1:] in ".!?" else text + ".")
        relevant[item["origin"]] |= {
            r["doc_id"].removeprefix(PREFIX) for r in item["relevant"] if int(r.get("grade", 1)) == 2
        }
    return {o: (" ".join(s), relevant[o], len(s)) for o, s in sentences.items()}


def long_text(by_origin: dict[str, tuple[str, set[str], int]], words: int) -> str:
    """The largest reports joined, paragraph by paragraph, until the text has `words` words (cut there)."""
    picked: list[str] = []
    count = 0
    for text, _, _ in sorted(by_origin.values(), key=lambda r: -len(r[0].split())):
        picked.append(text)
        count += len(text.split())
        if count >= words:
            break
    return "\n\n".join(picked) if count <= words else " ".join(" ".join(picked).split()[:words])


def scores(found: dict[str, float], relevant: set[str], threshold: float) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) of the techniques at or over threshold."""
    predicted = {t for t, s in found.items() if s >= threshold}
    return len(predicted & relevant), len(predicted - relevant), len(relevant - predicted)


def with_parents(found: dict[str, float]) -> dict[str, float]:
    out = dict(found)
    for technique, score in found.items():
        if "." in technique:
            parent = technique.split(".")[0]
            out[parent] = max(out.get(parent, 0.0), score)
    return out


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def summary(per_report: list[tuple[int, int, int]]) -> tuple[float, float, float, float, float, float]:
    """Micro P/R/F1 (counts summed over reports) and macro P/R/F1 (mean of the reports')."""
    micro = prf(*(sum(x[i] for x in per_report) for i in range(3)))
    each = [prf(*x) for x in per_report]
    macro = tuple(statistics.fmean(e[i] for e in each) for i in range(3))
    return (*micro, *macro)  # type: ignore[return-value]


def map_text(http: Poster, text: str, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    response = http.post("/v1/map", json={"text": text, "layer": False, **body})
    if response.status_code != 200:
        raise SystemExit(f"POST /v1/map answered {response.status_code}: {response.text[:500]}")
    return response.json()  # type: ignore[no-any-return]


def search_each(http: Poster, text: str) -> list[float]:
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


def run(http: Poster, args: argparse.Namespace, limit: int) -> None:
    by_origin = reports(load_items(args.queries))
    text = long_text(by_origin, args.words)
    map_text(http, "A first request loads what the API caches per process.")
    timings = []
    for _ in range(args.runs):
        started = time.perf_counter()
        answer = map_text(http, text)
        timings.append((time.perf_counter() - started) * 1000)
    default = float(answer["min_score"])
    print(
        f"latency, 1 client: a report of {len(text.split())} words, {answer['sentences']} sentences, "
        f"{len(answer['techniques'])} techniques at min_score {default}: "
        f"p50 {statistics.median(timings):.0f} ms, min {min(timings):.0f} ms, max {max(timings):.0f} ms "
        f"over {args.runs} runs (API's took_ms {answer['took_ms']:.0f})"
    )
    alone = search_each(http, text)
    print(
        f"the same sentences searched one by one (POST /v1/search as the map asks it, 1 client): "
        f"{sum(alone):.0f} ms in all, p50 {statistics.median(alone):.1f} ms"
    )
    found: dict[str, dict[str, float]] = {}
    for origin, (report, _, _) in sorted(by_origin.items()):
        answer = map_text(http, report, min_score=0, limit=limit)
        found[origin] = {t["technique_id"]: t["score"] for t in answer["techniques"]}
        if args.with_parents:
            found[origin] = with_parents(found[origin])
    print(f"\nper report at the default min_score {default}:")
    print(f"{'report':<48} {'sent':>4} {'rel':>4} {'found':>5} {'P':>6} {'R':>6} {'F1':>6}")
    rows = []
    for origin, (_, relevant, count) in sorted(by_origin.items()):
        tp, fp, fn = scores(found[origin], relevant, default)
        rows.append((tp, fp, fn))
        p, r, f = prf(tp, fp, fn)
        name = origin.removeprefix("tram2:").removesuffix(".mjson")[:48]
        print(f"{name:<48} {count:>4} {len(relevant):>4} {tp + fp:>5} {p:>6.3f} {r:>6.3f} {f:>6.3f}")
    columns = ("micro P", "micro R", "micro F1", "macro P", "macro R", "macro F1")
    print(f"\n{'min_score':>9} " + " ".join(f"{c:>8}" for c in columns))
    for threshold in sorted({*args.sweep, default}):
        per_report = [scores(found[o], rel, threshold) for o, (_, rel, _) in sorted(by_origin.items())]
        figures = " ".join(f"{v:>8.3f}" for v in summary(per_report))
        print(f"{threshold:>9.2f} {figures}{'   (default)' if threshold == default else ''}")
    if args.calibrate:
        calibrate(http, load_items(args.queries), args.ranks)


def calibrate(http: Poster, items: list[dict[str, Any]], ranks: int) -> None:
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
    print(f"\nrank precision over {len(items)} dev sentences (search.yaml map.rank_precision):")
    print("  " + ", ".join(f"{r / n:.3f}" if n else "-" for r, n in zip(right, seen, strict=True)))
    print("  sentences with a technique at each rank: " + ", ".join(map(str, seen)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--database-url", default=None, help="Run the API in process on this store (caches off).")
    parser.add_argument("--words", type=int, default=2000, help="Words of the latency report.")
    parser.add_argument("--runs", type=int, default=5, help="Timed maps of the latency report.")
    parser.add_argument(
        "--sweep", type=lambda s: [float(x) for x in s.split(",")], default=list(SWEEP), help="min_score values."
    )
    parser.add_argument("--with-parents", action="store_true", help="A sub-technique found counts for its parent.")
    parser.add_argument("--calibrate", action="store_true", help="Also the precision of each rank's vote.")
    parser.add_argument("--ranks", type=int, default=3, help="Ranks --calibrate measures (map.rank_precision's).")
    args = parser.parse_args()
    if args.database_url:
        from fastapi.testclient import TestClient

        from serving.api.app import create_app

        settings = api_settings(args.database_url).model_copy(update={"map_max_techniques": 500})
        with TestClient(create_app(settings)) as api:
            run(api, args, limit=500)
    else:
        headers = {"X-API-Key": args.api_key} if args.api_key else {}
        with httpx.Client(base_url=args.url, timeout=120, headers=headers) as http:
            run(http, args, limit=100)  # the default SECRAG_MAP_MAX_TECHNIQUES


if __name__ == "__main__":
    main()
