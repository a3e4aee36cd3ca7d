"""Latency (p50/p95/p99) and throughput of POST /v1/search per mode at 1, 4 and 8 concurrent clients.

Run against a served store:  secrag serve &  python bench/search.py --url http://127.0.0.1:8000
"""
from __future__ import annotations

import argparse
import json
import math
import threading
import time
from pathlib import Path

import httpx

DEFAULT_QUERIES = ["T1003", "T1059.001", "CVE-2021-44228", "mimikatz", "mimikats", "lsass memory dump",
                   "powershell encoded command", "scheduled task persistence", "credential dumping from lsass",
                   "how do attackers abuse rundll32 to proxy execution of malicious code"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def run(url: str, mode: str, clients: int, requests_per_client: int, queries: list[str], k: int) -> dict:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()

    def worker(offset: int) -> None:
        nonlocal errors
        with httpx.Client(base_url=url, timeout=10) as http:
            for i in range(requests_per_client):
                query = queries[(offset + i) % len(queries)]
                started = time.perf_counter()
                response = http.post("/v1/search", json={"query": query, "mode": mode, "k": k})
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(elapsed)
                    errors += response.status_code != 200

    threads = [threading.Thread(target=worker, args=(i * 7,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    return {"mode": mode, "clients": clients, "requests": len(latencies), "errors": errors,
            "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95),
            "p99_ms": percentile(latencies, 99), "rps": len(latencies) / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--modes", default="hybrid,fts,vector,fuzzy")
    parser.add_argument("--clients", default="1,4,8")
    parser.add_argument("--requests", type=int, default=50, help="Requests per client.")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--queries", type=Path, help="JSONL with a `query` field per line (default: built-in set).")
    args = parser.parse_args()
    queries = DEFAULT_QUERIES
    if args.queries:
        queries = [json.loads(line)["query"] for line in args.queries.read_text().splitlines() if line.strip()]
    with httpx.Client(base_url=args.url, timeout=30) as http:  # warm the query cache and the pool
        for query in queries[:20]:
            http.post("/v1/search", json={"query": query, "k": args.k})
    print(f"{'mode':<8} {'clients':>7} {'requests':>8} {'errors':>6} "
          f"{'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'req/s':>8}")
    for mode in args.modes.split(","):
        for clients in (int(c) for c in args.clients.split(",")):
            r = run(args.url, mode, clients, args.requests, queries, args.k)
            print(f"{r['mode']:<8} {r['clients']:>7} {r['requests']:>8} {r['errors']:>6} {r['p50_ms']:>8.1f} "
                  f"{r['p95_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['rps']:>8.1f}")


if __name__ == "__main__":
    main()
