"""secrag's POST /v1/search side by side with the peer server (bench/peer/server.py: Chroma over the same stored
vectors, MITRE augmentation, keyword boosts, the same HTTP stack), driven interleaved: p50/p99 and req/s of
both per setting (filters off and on x 1, 4 and 8 clients) and their ratio, and each one's nDCG@10.

Start both on the same store, secrag with its caches and anonymous quotas off (bench/README.md).

Each setting sends the query set (each distinct query once; `filters on`: each query's own source
filter, `off`: none) `--passes` times to each server, alternating servers in ABBA order (secrag, peer, then
peer, secrag, ...) so that drift on the machine hits both alike; a server's figures are over all its passes of
the setting (req/s: its requests over its wall time). Every request is a hybrid search of k results; each
client is a thread with one keep-alive http.client connection (bench/lib/api.py's Poster), taking the next query
of the pass. ratio = secrag req/s / peer req/s. nDCG@10 (bench/quality.py's metric, over the queries' graded
labels with their filters) is measured once per server, one client, before the timed runs. `--cpu`: each one's CPU
per request (its process and PostgreSQL's backends, on this machine).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from lib.api import Poster
from lib.queries import load_items, load_queries
from lib.relevance import evaluate, means
from lib.timing import cpu_ns, percentile

SERVERS = ("secrag", "peer")


def one_pass(
    url: str, queries: list[dict[str, Any]], clients: int, k: int, mode: str = "hybrid"
) -> tuple[list[float], int, float]:
    """Every query once over `clients` keep-alive connections: latencies (ms), errors, wall seconds."""
    results: list[tuple[float, bool]] = []
    order = iter(queries)

    def worker() -> None:
        poster = Poster(url, timeout=30)
        try:
            while (item := next(order, None)) is not None:  # a list iterator's next() is atomic
                body = {"query": item["query"], "mode": mode, "k": k, "filters": item["filters"]}
                started = time.perf_counter()
                failed = poster.post("/v1/search", body) != 200
                results.append(((time.perf_counter() - started) * 1000, failed))  # list.append is atomic too
        finally:
            poster.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:  # each thread one client to the end
        list(pool.map(lambda _: worker(), range(clients)))
    return [ms for ms, _ in results], sum(failed for _, failed in results), time.perf_counter() - started


def server_cpu(cpu: list[int], name: str) -> int:
    """A server's CPU nanoseconds so far: its process's and PostgreSQL's backends' (`cpu`: --cpu's PIDs; none: 0)."""
    return cpu_ns(cpu[SERVERS.index(name)]) + cpu_ns(cpu[2], children=True) if cpu else 0


def setting(urls: dict[str, str], queries: list[dict[str, Any]], clients: int, passes: int, k: int, mode: str,
            cpu: list[int]) -> dict:  # fmt: skip
    """Both servers over `passes` passes of the queries, ABBA-interleaved; figures per server."""
    runs: dict[str, dict[str, Any]] = {name: {"latencies": [], "errors": 0, "wall": 0.0, "cpu": 0} for name in SERVERS}
    for n in range(passes):
        for name in SERVERS if n % 2 == 0 else tuple(reversed(SERVERS)):
            run, used = runs[name], server_cpu(cpu, name)
            latencies, errors, wall = one_pass(urls[name], queries, clients, k, mode)
            run["cpu"], run["latencies"] = run["cpu"] + server_cpu(cpu, name) - used, run["latencies"] + latencies
            run["errors"], run["wall"] = run["errors"] + errors, run["wall"] + wall
    out: dict[str, Any] = {"clients": clients, "passes": passes, "queries": len(queries)}
    for name, run in runs.items():
        n, p50, p99 = len(run["latencies"]), percentile(run["latencies"], 50), percentile(run["latencies"], 99)
        out[name] = {"requests": n, "errors": run["errors"], "p50_ms": p50, "p99_ms": p99, "rps": n / run["wall"]}
        out[name]["cpu_ms"] = run["cpu"] / 1e6 / max(1, n)
    out["ratio"] = out["secrag"]["rps"] / out["peer"]["rps"]
    return out


def quality(urls: dict[str, str], items: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """nDCG@10 and MRR@10 of each server over the labelled queries (their filters), and per task."""
    out: dict[str, Any] = {}
    for name in SERVERS:
        with httpx.Client(base_url=urls[name], timeout=60) as http:
            scores, failures = evaluate(http, items, [mode], {})
        tasks = {task: round(means(values)[0], 4) for (task, _), values in sorted(scores.items())}
        out[name] = {"failures": failures, **tasks, "mrr@10": round(means(scores[("ALL", mode)])[1], 4)}
    return out


def warm_up(urls: dict[str, str], k: int) -> None:
    """Open each server's pools and load its model, without warming any cache for the measured queries."""
    for url in urls.values():
        poster = Poster(url, timeout=60)
        for i in range(10):
            poster.post("/v1/search", {"query": f"warm-up query number {i}", "mode": "hybrid", "k": k})
        poster.close()


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| filters | clients | secrag p50 / p99 | peer p50 / p99 | secrag req/s | peer req/s | ratio | errors | CPU |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s, p = r["secrag"], r["peer"]
        cpu = f"{s['cpu_ms']:.2f} / {p['cpu_ms']:.2f} ms" if s["cpu_ms"] or p["cpu_ms"] else "(--cpu)"
        lines.append(
            f"| {r['filters']} | {r['clients']} | {s['p50_ms']:.1f} / {s['p99_ms']:.1f} ms "
            f"| {p['p50_ms']:.1f} / {p['p99_ms']:.1f} ms | {s['rps']:.1f} | {p['rps']:.1f} | {r['ratio']:.2f} "
            f"| {s['errors']} / {p['errors']} | {cpu} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--secrag-url", default="http://127.0.0.1:8000")
    parser.add_argument("--peer-url", default="http://127.0.0.1:8001")
    parser.add_argument("--queries", type=Path, default=Path("../shared/eval/dev_queries.jsonl"))
    parser.add_argument("--clients", default="1,4,8")
    parser.add_argument("--filters", default="off,on", help="Settings of the queries' source filters: off, on.")
    parser.add_argument("--passes", type=int, default=2, help="Passes of the query set per server and setting.")
    parser.add_argument("--limit", type=int, default=0, help="Only the first N queries (0 = all; for a quick check).")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--mode", default="hybrid", help="secrag's search mode (hybrid, vector); the peer has one.")
    parser.add_argument("--no-quality", action="store_true", help="Skip the nDCG@10 of both.")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON, not a table.")
    parser.add_argument("--cpu", default="", help="PIDs of secrag's server, the peer and PostgreSQL's postmaster.")
    args = parser.parse_args()
    urls = {"secrag": args.secrag_url, "peer": args.peer_url}
    warm_up(urls, args.k)
    report: dict[str, Any] = {"urls": urls, "settings": []}
    if not args.no_quality:
        items = load_items(args.queries, args.limit)
        report["quality"] = {"queries": len(items), **quality(urls, items, args.mode)}
    for filters in args.filters.split(","):
        queries = load_queries(args.queries, filters == "on")[: args.limit or None]
        for clients in (int(c) for c in args.clients.split(",")):
            result = setting(
                urls, queries, clients, args.passes, args.k, args.mode, [int(p) for p in args.cpu.split(",") if p]
            )
            report["settings"].append({"filters": filters, **result})
            if not args.json:
                print(f"filters {filters}, {clients} clients: done", flush=True)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    queries_used = report["settings"][0]["queries"] if report["settings"] else 0
    print(f"\n{queries_used} distinct queries, {args.passes} passes per server and setting, {args.mode}, k={args.k}\n")
    print(table(report["settings"]))
    if "quality" in report:
        q = report["quality"]
        print(f"\nnDCG@10 over {q['queries']} labelled queries (their filters): ", end="")
        print(", ".join(f"{name} {q[name]['ALL']:.3f} (MRR@10 {q[name]['mrr@10']:.3f})" for name in SERVERS))
        for task in sorted(t for t in q["secrag"] if t not in ("ALL", "failures", "mrr@10")):
            print(f"  {task:<28} secrag {q['secrag'][task]:.3f}  peer {q['peer'].get(task, 0.0):.3f}")
        if q["secrag"]["failures"] or q["peer"]["failures"]:
            print(f"  failed requests: secrag {q['secrag']['failures']}, peer {q['peer']['failures']}")


if __name__ == "__main__":
    main()
