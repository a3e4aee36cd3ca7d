"""POST /v1/map on whole reports (cti_dev_reports.jsonl: `text`, `techniques`, `annotations` as offsets), in
process on the store (`--database-url`): the latency of a ~2,000-word report at one client (the longest report's
first sentences) and, per min_score of one request each at min_score 0, micro and macro precision, recall and F1 of
each report's techniques, and the sentence precision (the share of (technique, supporting sentence) pairs whose
sentence overlaps an annotation of that technique). `--sharing` measures two API keys sharing the maps' turns
instead, over HTTP (`--url`), over REST and then MCP: `--maps` maps of the first key beside the other key's
searches and map (run the API with caches off, SECRAG_RATE_PER_MINUTE=0 and SECRAG_MAP_TIMEOUT_SECONDS short
enough that a starved map shows as unanswered).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence, Set
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from lib.api import Client, in_process
from lib.queries import EVAL, load_items
from lib.timing import percentile

DEFAULT_QUERIES = EVAL / "cti_dev_queries.jsonl"
DEFAULT_REPORTS = EVAL / "cti_dev_reports.jsonl"
SWEEP = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
WORDS, RANKS, LIMIT = 2000, 3, 500  # the latency report's words, the ranks --calibrate measures, techniques a map
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
    """A report's map at min_score 0: each technique's score and its supporting sentences' spans; the sentences
    unanswered and the techniques omitted."""

    scores: dict[str, float]
    supports: dict[str, tuple[Span, ...]]
    unanswered: int
    omitted: int


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
        unanswered=len(body.get("unanswered") or []),
        omitted=int(body.get("omitted", 0)),
    )


def scores(found: Mapping[str, float], relevant: Set[str], threshold: float) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) of the techniques at or over threshold."""
    predicted = {t for t, s in found.items() if s >= threshold}
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


def sentence_hits(supports: Mapping[str, Sequence[Span]], annotations: Sequence[Annotation]) -> tuple[int, int]:
    """(pairs whose sentence overlaps an annotation of that technique, pairs) over the (technique, supporting
    sentence) pairs of `supports`."""
    pairs = [(t, span) for t, spans in supports.items() for span in spans]
    right = sum(any(t == a[2] and overlaps(span, a[:2]) for a in annotations) for t, span in pairs)
    return right, len(pairs)


def supports_at(answer: Answer, threshold: float) -> dict[str, tuple[Span, ...]]:
    """The supporting sentences of the techniques at or over threshold."""
    return {t: spans for t, spans in answer.supports.items() if answer.scores.get(t, 0.0) >= threshold}


def figures(
    reports: Sequence[Report], answers: Mapping[str, Answer], thresholds: Sequence[float], default: float
) -> list[dict[str, Any]]:
    """Per min_score: micro and macro P/R/F1 of the technique sets and the sentence precision."""
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
                "sentence_precision": right / pairs if pairs else 0.0,
            }
        )
    return sweep


def map_text(http: Client, text: str, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    response = http.post("/v1/map", json={"text": text, "layer": False, **body})
    if response.status_code != 200:
        raise SystemExit(f"POST /v1/map answered {response.status_code}: {response.text[:500]}")
    return response.json()  # type: ignore[no-any-return]


def run(http: Client, args: argparse.Namespace) -> None:
    """Every figure of the run (see the module docstring), printed."""
    from serving.mapping.sentences import split

    reports = sorted(from_reports(load_items(args.reports)), key=lambda r: r.origin)
    longest = max(reports, key=lambda r: len(r.text.split())).text
    text = leading_text(longest, [s.end for s in split(longest)], WORDS)
    map_text(http, "A first request loads what the API caches per process.")
    timings = []
    for _ in range(args.runs):  # the text at one client
        started = time.perf_counter()
        answer = map_text(http, text)
        timings.append((time.perf_counter() - started) * 1000)
    answers = {r.origin: answer_of(map_text(http, r.text, min_score=0, limit=LIMIT)) for r in reports}
    default = float(answer["min_score"])
    print(
        f"latency, 1 client: {len(text.split())} words, {answer['sentences']} sentences: p50 "
        f"{statistics.median(timings):.0f} ms over {len(timings)} runs ({', '.join(f'{v:.0f}' for v in timings)})"
    )
    print(f"\n{len(reports)} reports of {args.reports} (default min_score {default}):")
    columns = ("micro P", "micro R", "micro F1", "macro P", "macro R", "macro F1", "sent P")
    print(f"\n{'min_score':>9} " + " ".join(f"{c:>8}" for c in columns))
    for row in figures(reports, answers, SWEEP, default):
        cells = " ".join(f"{v:>8.3f}" for v in (*row["micro"].values(), *row["macro"].values()))
        print(f"{row['min_score']:>9.2f} {cells} {row['sentence_precision']:>8.3f}{'  (default)' * row['default']}")
    unanswered = sum(a.unanswered for a in answers.values())
    omitted = sum(1 for a in answers.values() if a.omitted)
    print(f"{unanswered} sentences unanswered; {omitted} reports had techniques cut by the limit {LIMIT}")
    if args.calibrate:
        calibration = calibrate(http, load_items(DEFAULT_QUERIES), RANKS)
        print("rank precision (map.rank_precision): " + ", ".join(f"{p:.3f}" for p in calibration if p))


def calibrate(http: Client, items: list[dict[str, Any]], ranks: int) -> list[float | None]:
    """Per rank, the share of dev sentences whose technique at that rank is one of the sentence's own."""
    right, seen = [0] * ranks, [0] * ranks
    for item in items:
        text = " ".join(item["query"].split())
        relevant = {r["doc_id"].removeprefix(PREFIX) for r in item["relevant"] if int(r.get("grade", 1)) == 2}
        for technique in map_text(http, text[:1].upper() + text[1:], min_score=0, limit=ranks * 4)["techniques"]:
            rank = min(s["rank"] for s in technique["sentences"])
            if rank <= ranks:
                seen[rank - 1] += 1
                right[rank - 1] += technique["technique_id"] in relevant
    return [r / n if n else None for r, n in zip(right, seen, strict=True)]


MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


def call(http: httpx.Client, via: str, key: str, tool: str, body: dict[str, Any]) -> tuple[int, float, dict[str, Any]]:
    """One search or map over REST or as an MCP tool (a tool error: 500): its status, seconds and answer."""
    started = time.perf_counter()
    if via == "rest":
        response = http.post(f"/v1/{tool}", json=body, headers={"X-API-Key": key})
        answer = response.json() if response.status_code == 200 else {}
        return response.status_code, time.perf_counter() - started, answer
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": body}}
    response = http.post("/mcp/", json=rpc, headers={**MCP_HEADERS, "x-api-key": key})
    result = response.json().get("result") or {} if response.status_code == 200 else {"isError": True}
    took = time.perf_counter() - started
    if result.get("isError"):
        return response.status_code if response.status_code != 200 else 500, took, {}
    return 200, took, dict(result.get("structuredContent") or json.loads(result["content"][0]["text"]))


def searches(http: httpx.Client, via: str, key: str, queries: list[str], stop: threading.Event) -> list[float]:
    """The key's searches one after another until `stop`, their seconds."""
    took: list[float] = []
    while not stop.is_set():
        took.append(call(http, via, key, "search", {"query": queries[len(took) % len(queries)], "k": 10})[1])
    return took


def sentences_text(sentences: list[str], most: int) -> str:
    """Up to `most` dev sentences, each one sentence with a capital and a full stop."""
    return " ".join(s[:1].upper() + s[1:].replace(". ", ", ").rstrip(".") + "." for s in (sentences * 3)[:most])


def sharing(http: httpx.Client, args: argparse.Namespace) -> None:
    """Two callers over REST, then over MCP: one flooding maps, the other searching and mapping meanwhile."""
    sentences = [" ".join(i["query"].split()) for i in load_items(DEFAULT_QUERIES)]
    queries, flood = sentences[: args.searches], sentences_text(sentences, args.flood_sentences)
    own = sentences_text(sentences[::-1], args.other_sentences)
    print("| via | other key's searches | p50 / p99 ms | its map | the flood |")
    print("|---|---|---|---|---|")
    for via in ("rest", "mcp"):
        stop = threading.Event()
        with ThreadPoolExecutor(max_workers=args.maps + 2) as pool:
            body = {"text": flood, "layer": False}
            floods = [pool.submit(call, http, via, args.api_key, "map", body) for _ in range(args.maps)]
            time.sleep(1.0)  # the flood under way
            searching = pool.submit(searches, http, via, args.other_key, queries, stop)
            status, seconds, body = call(http, via, args.other_key, "map", {"text": own, "layer": False})
            flooded = [f.result() for f in floods]
            stop.set()
        ms = [t * 1000 for t in searching.result()]
        lost = sum(len(b.get("unanswered", [])) for _, _, b in flooded)
        print(
            f"| {via} | {len(ms)} | {percentile(ms, 50):.1f} / {percentile(ms, 99):.1f} | {status}, "
            f"{len(body.get('unanswered', []))} of {body.get('sentences', '?')} unanswered, {seconds:.1f} s | "
            f"{dict(Counter(s for s, _, _ in flooded))}, {lost} unanswered |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=Path, nargs="?", const=DEFAULT_REPORTS, default=DEFAULT_REPORTS)
    parser.add_argument("--database-url", default=None, help="Run the API in process on this store (caches off).")
    parser.add_argument("--runs", type=int, default=5, help="Timed maps of the latency report.")
    parser.add_argument("--calibrate", action="store_true", help="Also the precision of each rank's vote.")
    sharing_flags = parser.add_argument_group("--sharing")
    sharing_flags.add_argument("--sharing", action="store_true", help="Two keys sharing the maps (over --url).")
    sharing_flags.add_argument("--url", default="http://127.0.0.1:8000")
    sharing_flags.add_argument("--api-key", default=None, help="The maps' API key.")
    sharing_flags.add_argument("--other-key", help="The other caller's API key.")
    sharing_flags.add_argument("--maps", type=int, default=4, help="The first key's maps at once.")
    sharing_flags.add_argument("--flood-sentences", type=int, default=200, help="Sentences of each of them.")
    sharing_flags.add_argument("--other-sentences", type=int, default=40, help="Sentences of the other's map.")
    sharing_flags.add_argument("--searches", type=int, default=80, help="Dev queries the other key cycles through.")
    args = parser.parse_args()
    if args.sharing:
        with httpx.Client(base_url=args.url, timeout=300, limits=httpx.Limits(max_connections=32)) as http:
            sharing(http, args)
    elif not args.database_url:
        parser.error("--database-url is required without --sharing")
    else:
        with in_process(args.database_url, map_max_techniques=LIMIT) as api:
            run(api, args)


if __name__ == "__main__":
    main()
