"""POST /v1/map under load, over HTTP: what a map costs the rest of the API. Rows: the other key's searches alone
(p50 / p99); /healthz every 50 ms during one maximal map, and during a map of `--dots` full stops; the other key's
searches while `--maps` maximal maps run; the dev reports mapped `--parallel` at a time. `--sharing` instead runs,
over REST and then MCP, `--maps` maps of the first key beside the other key's searches and map. Run the API with
caches off, SECRAG_RATE_PER_MINUTE=0 and (for `--sharing`) SECRAG_MAP_TIMEOUT_SECONDS short enough that a starved
map shows as unanswered.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from lib.queries import EVAL
from lib.timing import percentile


def _row(name: str, values: list[float], extra: str = "") -> None:
    ms = [v * 1000 for v in values]
    cells = [f"{v:.1f}" for v in (percentile(ms, 50), percentile(ms, 99), max(ms, default=float("nan")))]
    print(f"| {name} | {len(ms)} | {' | '.join(cells)} | {extra} |", flush=True)


class Probe:
    """Requests to `path` every `every` seconds on a thread of its own, each one's latency kept."""

    def __init__(self, http: httpx.Client, path: str, every: float = 0.05) -> None:
        self.http, self.path, self.every = http, path, every
        self.latencies: list[float] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                ok = self.http.get(self.path).status_code == 200
            except httpx.HTTPError:
                ok = False
            self.latencies.append(time.perf_counter() - started)
            self.errors += not ok
            self._stop.wait(self.every)


def searches(http: httpx.Client, key: str, queries: list[str], stop: threading.Event | None = None) -> list[float]:
    """The key's searches one after another (until `stop`, cycling through the queries), their latencies."""
    took: list[float] = []
    i = 0
    while (stop is None and i < len(queries)) or (stop is not None and not stop.is_set()):
        started = time.perf_counter()
        response = http.post(
            "/v1/search", json={"query": queries[i % len(queries)], "k": 10}, headers={"X-API-Key": key}
        )
        took.append(time.perf_counter() - started)
        if response.status_code != 200:
            print(f"  search {response.status_code}: {response.text[:120]}")
        i += 1
    return took


MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}


def mcp_tool(http: httpx.Client, key: str, tool: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One MCP tool call over streamable HTTP (JSON responses): 200 and its structured answer, or the HTTP status
    (a tool error: 500) and {}."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = http.post("/mcp/", json=body, headers={**MCP_HEADERS, "x-api-key": key})
    if response.status_code != 200:
        return response.status_code, {}
    result = response.json().get("result") or {}
    if result.get("isError"):
        return 500, {}
    answer = result.get("structuredContent") or json.loads(result["content"][0]["text"])
    return 200, dict(answer)


def searched(http: httpx.Client, via: str, key: str, queries: list[str], stop: threading.Event) -> list[float]:
    """The key's searches over REST or MCP one after another until `stop`, their latencies."""
    if via == "rest":
        return searches(http, key, queries, stop)
    took: list[float] = []
    i = 0
    while not stop.is_set():
        started = time.perf_counter()
        status, _ = mcp_tool(http, key, "search", {"query": queries[i % len(queries)], "k": 10})
        took.append(time.perf_counter() - started)
        if status != 200:
            print(f"  mcp search {status}")
        i += 1
    return took


def mapped_via(http: httpx.Client, via: str, key: str, text: str) -> tuple[int, float, dict[str, Any]]:
    if via == "rest":
        return map_once(http, key, text)
    started = time.perf_counter()
    status, answer = mcp_tool(http, key, "map", {"text": text, "layer": False})
    return status, time.perf_counter() - started, answer


def sharing(http: httpx.Client, args: argparse.Namespace, sentences: list[str], queries: list[str]) -> None:
    """Two callers over REST, then over MCP: one flooding maps, the other searching and mapping meanwhile."""
    flood = _maximal(sentences, args.flood_sentences, args.chars)
    own = _maximal(sentences[::-1], args.other_sentences, args.chars)
    for via in ("rest", "mcp"):
        stop = threading.Event()
        with ThreadPoolExecutor(max_workers=args.maps + 2) as pool:
            floods = [pool.submit(mapped_via, http, via, args.key, flood) for _ in range(args.maps)]
            time.sleep(1.0)  # the flood under way
            during = pool.submit(searched, http, via, args.other_key, queries, stop)
            status, took, body = mapped_via(http, via, args.other_key, own)
            flooded = [f.result() for f in floods]
            stop.set()
            latencies = during.result()
        statuses = Counter(s for s, _, _ in flooded)
        lost = sum(len(b.get("unanswered", [])) for _, _, b in flooded)
        _row(
            f"{via}: other key during {args.maps} maps of {args.flood_sentences}",
            latencies,
            f"its map: {status}, {len(body.get('unanswered', []))} of {body.get('sentences', '?')} sentences "
            f"unanswered, {took:.1f} s; the flood: {dict(statuses)}, {lost} unanswered",
        )


def map_once(http: httpx.Client, key: str, text: str) -> tuple[int, float, dict[str, Any]]:
    started = time.perf_counter()
    try:
        response = http.post("/v1/map", json={"text": text, "layer": False}, headers={"X-API-Key": key})
    except httpx.TimeoutException:
        return 0, time.perf_counter() - started, {}
    took = time.perf_counter() - started
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    return response.status_code, took, body


def _describe(status: int, took: float, body: dict[str, Any]) -> str:
    if status == 0:
        return f"no answer within the client's timeout ({took:.0f} s)"
    unanswered = len(body.get("unanswered", []))
    return f"map {status} in {took:.1f} s, {body.get('sentences', '?')} sentences, {unanswered} unanswered"


def _maximal(sentences: list[str], most: int, chars: int) -> str:
    """Dev sentences, each one sentence with a capital and a full stop, up to `most` of them and `chars`."""
    picked: list[str] = []
    size = 0
    for s in sentences * 3:
        one = s[:1].upper() + s[1:].replace(". ", ", ").rstrip(".") + "."
        if len(picked) == most or size + len(one) + 1 > chars:
            break
        picked.append(one)
        size += len(one) + 1
    return " ".join(picked)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True, help="the maps' API key")
    ap.add_argument("--other-key", required=True, help="the other caller's API key")
    ap.add_argument("--queries", type=Path, default=EVAL / "cti_dev_queries.jsonl")
    ap.add_argument("--reports", type=Path, default=EVAL / "cti_dev_reports.jsonl")
    ap.add_argument("--sentences", type=int, default=600)
    ap.add_argument("--chars", type=int, default=65_000)
    ap.add_argument("--dots", type=int, default=20_000)
    ap.add_argument("--maps", type=int, default=4)
    ap.add_argument("--searches", type=int, default=80)
    ap.add_argument("--parallel", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--sharing", action="store_true", help="two callers sharing the maps' turns (REST, MCP) only")
    ap.add_argument("--flood-sentences", type=int, default=200)
    ap.add_argument("--other-sentences", type=int, default=40)
    args = ap.parse_args()

    items = [json.loads(line) for line in args.queries.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = [" ".join(i["query"].split()) for i in items][: args.searches]
    sentences = [" ".join(i["query"].split()) for i in items]
    maximal = _maximal(sentences, args.sentences, args.chars)
    dots = "." * args.dots + "x Then the actor dumped credentials."
    http = httpx.Client(base_url=args.url, timeout=args.timeout, limits=httpx.Limits(max_connections=32))
    map_once(http, args.key, "A first request loads what the API caches per process.")  # warm

    print("| what | requests | p50 ms | p99 ms | max ms | notes |")
    print("|---|---|---|---|---|---|")
    _row("alone: other key's searches", searches(http, args.other_key, queries))
    if args.sharing:
        sharing(http, args, sentences, queries)
        return
    with Probe(http, "/healthz") as probe:
        result = map_once(http, args.key, maximal)
    _row("healthz, maximal map", probe.latencies, _describe(*result))
    with Probe(http, "/healthz") as probe:
        result = map_once(http, args.key, dots)
    _row("healthz, dots", probe.latencies, _describe(*result))

    stop = threading.Event()
    outcomes: list[tuple[int, float, dict[str, Any]]] = []
    with ThreadPoolExecutor(max_workers=args.maps + 1) as pool:
        other = pool.submit(searches, http, args.other_key, queries, stop)
        maps = [pool.submit(map_once, http, args.key, maximal) for _ in range(args.maps)]
        outcomes = [m.result() for m in maps]
        stop.set()
        during = other.result()
    statuses = Counter(status for status, _, _ in outcomes)
    unanswered = sum(len(body.get("unanswered", [])) for _, _, body in outcomes)
    took = max(t for _, t, _ in outcomes)
    _row(
        f"other key, {args.maps} maximal maps",
        during,
        f"maps: {dict(statuses)}, {unanswered} sentences unanswered, longest {took:.1f} s",
    )

    reports = [json.loads(line) for line in args.reports.read_text(encoding="utf-8").splitlines() if line.strip()]
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        mapped = list(pool.map(lambda r: map_once(http, args.key, r["text"]), reports))
    statuses = Counter(status for status, _, _ in mapped)
    unanswered = sum(len(body.get("unanswered", [])) for _, _, body in mapped)
    seconds = [t for _, t, _ in mapped]
    print(
        f"\nreports: {len(reports)} mapped {args.parallel} at a time: {dict(statuses)}; {unanswered} sentences "
        f"unanswered; seconds per report p50 {statistics.median(seconds):.1f}, max {max(seconds):.1f}"
    )


if __name__ == "__main__":
    main()
