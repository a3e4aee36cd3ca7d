"""The first searches after an API restart, with and without the start-up warm-up (serving/api/warm_up.py).

    python bench/warm_up.py --database-url postgresql://...secrag_bench... [--first 5] [--rounds 3]

For each setting (SECRAG_WARM_UP=0, then 1), `--rounds` times: starts `secrag serve` on a free port
(caches off, quotas off), times how long it takes to be ready, then sends hybrid searches one at a time:
`--first` queries, then 40 more for the steady state. The queries are distinct dev queries (the same
ones for both settings, other ones each round). PostgreSQL keeps running: this is an API restart (a
deploy, a crashed worker), not a cold database.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from flood import _free_port, _wait_ready

QUERIES = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev_queries.jsonl"
STEADY = 40


def _search(conn: http.client.HTTPConnection, query: str) -> float:
    started = time.perf_counter()
    conn.request(
        "POST", "/v1/search", body=json.dumps({"query": query, "k": 10}), headers={"Content-Type": "application/json"}
    )
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise SystemExit(f"search answered {response.status}")
    return (time.perf_counter() - started) * 1000


def run(database_url: str, warm: bool, queries: list[str], first: int) -> dict[str, float]:
    port = _free_port()
    env = {
        **os.environ,
        "SECRAG_DATABASE_URL": database_url,
        "SECRAG_WARM_UP": "1" if warm else "0",
        "SECRAG_QUERY_CACHE_SIZE": "0",
        "SECRAG_RESULT_CACHE_SIZE": "0",
        "SECRAG_ANONYMOUS_RATE_PER_MINUTE": "0",
        "SECRAG_ANONYMOUS_HEAVY_CONCURRENCY": "0",
    }
    cmd = [sys.executable, "-m", "secrag_cli.main", "serve", "--port", str(port), "--log-level", "warning"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    try:
        _wait_ready(port, proc)
        ready_s = time.perf_counter() - started
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        times = [_search(conn, q) for q in queries[: first + STEADY]]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {
        "ready_s": ready_s,
        "first_ms": times[0],
        f"first{first}_mean_ms": statistics.mean(times[:first]),
        "steady_p50_ms": statistics.median(times[first:]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--first", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    texts = [json.loads(line)["query"] for line in QUERIES.read_text().splitlines() if line.strip()]
    per_round = args.first + STEADY
    results: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    for i in range(args.rounds):
        queries = texts[i * per_round : (i + 1) * per_round]
        for warm in (False, True):
            results[warm].append(run(args.database_url, warm, queries, args.first))
    for warm, rows in results.items():
        medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"warm-up {'on ' if warm else 'off'} (median of {args.rounds}): "
            + "  ".join(f"{k} {v:.2f}" if k == "ready_s" else f"{k} {v:.1f}" for k, v in medians.items())
        )


if __name__ == "__main__":
    main()
