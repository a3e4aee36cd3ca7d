"""Plan latency (p50/p99) over the dev queries, next to a hybrid search of the same candidate count.

Run against a served store:  secrag serve &  python bench/plans.py --queries ../shared/eval/dev_queries.jsonl
The overhead of planning is POST /v1/plan minus POST /v1/search with k = the plan's candidate count.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import httpx


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def timed(http: httpx.Client, path: str, body: dict) -> tuple[float, dict]:
    started = time.perf_counter()
    response = http.post(path, json=body)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response.json()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--limit", type=int, default=0, help="Only the first N queries (0 = all).")
    parser.add_argument("--rounds", type=int, default=2, help="Passes over the queries (first pass warms up).")
    args = parser.parse_args()
    queries = [json.loads(line)["query"] for line in args.queries.read_text().splitlines() if line.strip()]
    if args.limit:
        queries = queries[: args.limit]
    plan_ms: list[float] = []
    search_ms: list[float] = []
    overhead: list[float] = []
    confidence: list[float] = []
    by_type: dict[str, int] = {}
    with httpx.Client(base_url=args.url, timeout=30) as http:
        for round_no in range(args.rounds):
            for query in queries:
                p_ms, plan = timed(http, "/v1/plan", {"query": query})
                candidates = min(50, plan["plan"]["total_chunks"] * plan["plan"]["candidates_multiplier"])
                s_ms, _ = timed(
                    http,
                    "/v1/search",
                    {
                        "query": query,
                        "k": candidates,
                        "return": {"text": True, "snippets": False, "max_text_chars": 4000},
                    },
                )
                if round_no == 0 and args.rounds > 1:
                    continue
                plan_ms.append(p_ms)
                search_ms.append(s_ms)
                overhead.append(p_ms - s_ms)
                confidence.append(plan["metrics"]["confidence"])
                by_type[plan["query_type"]] = by_type.get(plan["query_type"], 0) + 1
    print(f"{len(plan_ms)} plans over {len(queries)} queries; query types: {by_type}")
    print(f"{'':<22} {'p50':>8} {'p99':>8} {'mean':>8}")
    for name, values in (("plan ms", plan_ms), ("search ms (same k)", search_ms), ("overhead ms", overhead)):
        print(
            f"{name:<22} {percentile(values, 50):>8.1f} {percentile(values, 99):>8.1f} {statistics.fmean(values):>8.1f}"
        )
    print(f"mean confidence {statistics.fmean(confidence):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
