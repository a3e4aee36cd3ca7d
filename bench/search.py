"""Latency (p50/p95/p99) and throughput of POST /v1/search per mode at 1, 4 and 8 concurrent clients.

Query encoding is part of each request only when the API's query-vector cache misses, so measure
with the cache off and with distinct queries (each request takes the next query of the set):

    SECRAG_QUERY_CACHE_SIZE=0 SECRAG_RESULT_CACHE_SIZE=0 \\
        SECRAG_ANONYMOUS_RATE_PER_MINUTE=0 SECRAG_ANONYMOUS_HEAVY_CONCURRENCY=0 secrag serve &
    python bench/search.py --url http://127.0.0.1:8000 --queries ../shared/eval/dev_queries.jsonl

(The bench is one anonymous caller at up to 8 concurrent requests: the anonymous quotas must be off.)
The `cache hits` column (from /metrics, which shows the caches' counters only to a scrape holding its key:
start the API with SECRAG_METRICS_KEY and pass it as --metrics-key; without, the column stays 0) shows
whether any request skipped encoding. Each client is a
thread with one keep-alive connection driven by the standard library's http.client: the clients share the
2 cores with the server, and httpx spent about 1.5 ms of CPU per request that the server then lacked.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import math
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from prometheus_client.parser import text_string_to_metric_families

DEFAULT_QUERIES = [
    "T1003",
    "T1059.001",
    "CVE-2021-44228",
    "mimikatz",
    "mimikats",
    "lsass memory dump",
    "powershell encoded command",
    "scheduled task persistence",
    "credential dumping from lsass",
    "how do attackers abuse rundll32 to proxy execution of malicious code",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def encoder_stats(http: httpx.Client) -> dict:
    """The query encoder's counters from /metrics (`secrag_query_encoder{stat=...}`); {} when not shown."""
    response = http.get("/metrics")
    if response.status_code != 200:
        return {}
    return {
        sample.labels["stat"]: sample.value
        for family in text_string_to_metric_families(response.text)
        if family.name == "secrag_query_encoder"
        for sample in family.samples
    }


def metrics_client(url: str, metrics_key: str | None) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=30, headers={"X-API-Key": metrics_key} if metrics_key else {})


class Poster:
    """POSTs JSON over one keep-alive HTTP/1.1 connection (reopened after an error)."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.prefix = parts.hostname or "127.0.0.1", parts.port or 80, parts.path.rstrip("/")
        self.timeout = timeout
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def post(self, path: str, body: dict) -> int:
        try:
            self.conn.request(
                "POST", self.prefix + path, body=json.dumps(body).encode(), headers={"content-type": "application/json"}
            )
            response = self.conn.getresponse()
            response.read()
            return response.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            return 0

    def close(self) -> None:
        self.conn.close()


def run(
    url: str, mode: str, clients: int, requests_per_client: int, queries: list[dict], k: int, metrics_key: str | None
) -> dict:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    order = itertools.cycle(queries)

    def worker() -> None:
        nonlocal errors
        poster = Poster(url, timeout=10)
        try:
            for _ in range(requests_per_client):
                with lock:
                    item = next(order)
                body = {"query": item["query"], "mode": mode, "k": k, "filters": item.get("filters") or {}}
                started = time.perf_counter()
                status = poster.post("/v1/search", body)
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(elapsed)
                    errors += status != 200
        finally:
            poster.close()

    with metrics_client(url, metrics_key) as http:
        before = encoder_stats(http)
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    with metrics_client(url, metrics_key) as http:
        after = encoder_stats(http)
    hits = after.get("hits", 0) - before.get("hits", 0)
    encoded = after.get("encoded", 0) - before.get("encoded", 0)
    runs = after.get("runs", 0) - before.get("runs", 0)
    return {
        "mode": mode,
        "clients": clients,
        "requests": len(latencies),
        "errors": errors,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "rps": len(latencies) / wall,
        "cache_hits": hits,
        "per_run": encoded / runs if runs else 0.0,
    }


def load_queries(path: Path | None, filters: bool) -> list[dict]:
    if path is None:
        return [{"query": q} for q in DEFAULT_QUERIES]
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    seen: set[str] = set()
    out = []
    for item in items:
        if item["query"] in seen:
            continue
        seen.add(item["query"])
        kept = {k: v for k, v in (item.get("filters") or {}).items() if v} if filters else {}
        out.append({"query": item["query"][:8000], "filters": kept})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--modes", default="hybrid,fts,vector,fuzzy")
    parser.add_argument("--clients", default="1,4,8")
    parser.add_argument("--requests", type=int, default=50, help="Requests per client.")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--queries",
        type=Path,
        help="JSONL with a `query` (and optional `filters`) per line (default: a built-in set of 10).",
    )
    parser.add_argument("--no-filters", action="store_true", help="Ignore the queries' filters.")
    parser.add_argument("--metrics-key", help="The API's SECRAG_METRICS_KEY, to read the cache counters.")
    args = parser.parse_args()
    queries = load_queries(args.queries, not args.no_filters)
    with httpx.Client(base_url=args.url, timeout=30) as http:  # warm the pool and the model, not the cache
        for i in range(10):
            http.post("/v1/search", json={"query": f"warm-up query number {i}", "k": args.k})
    with metrics_client(args.url, args.metrics_key) as http:
        cache = encoder_stats(http)
    print(f"{len(queries)} distinct queries; query cache size {cache.get('max_size', '?')}")
    print(
        f"{'mode':<8} {'clients':>7} {'requests':>8} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'req/s':>8} {'cache hits':>10} {'q/run':>6}"
    )
    for mode in args.modes.split(","):
        for clients in (int(c) for c in args.clients.split(",")):
            r = run(args.url, mode, clients, args.requests, queries, args.k, args.metrics_key)
            print(
                f"{r['mode']:<8} {r['clients']:>7} {r['requests']:>8} {r['errors']:>6} {r['p50_ms']:>8.1f} "
                f"{r['p95_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['rps']:>8.1f} {r['cache_hits']:>10} "
                f"{r['per_run']:>6.2f}"
            )


if __name__ == "__main__":
    main()
