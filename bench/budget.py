"""Where a search's time goes: query encoding, PostgreSQL, and secrag's own Python, per request.

    python bench/budget.py --database-url postgresql://...secrag_bench... [--mode hybrid] [--no-filters]

Runs every dev query once (after a warm-up pass) through the API's own search code in process (the
Service the app builds, caches off), timing the encoder's model run, each statement (execute and
fetch over the local socket) and the rest (analysis, planning, fusion, rescoring, the response
model). HTTP (uvicorn, routing, validation, JSON) is what bench/search.py's latency adds on top of
the response's took_ms. Prints the mean and p50 of each share.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from serving.access.keys import ANONYMOUS
from serving.api.app import start_service, stop_service
from serving.contract.requests import SearchRequest
from serving.observability.prometheus import Exposition
from serving.search import searcher as search_run
from serving.settings import ServingSettings

QUERIES = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev_queries.jsonl"


def timed(spent: dict[str, float], name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent[name] += (time.perf_counter() - started) * 1000

    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--no-filters", action="store_true")
    args = ap.parse_args()
    items = [json.loads(line) for line in QUERIES.read_text().splitlines() if line.strip()]
    settings = ServingSettings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=args.database_url,
        mcp_enabled=False,
        query_cache_size=0,
        result_cache_size=0,
        warm_up=False,
    )
    service = start_service(settings, Exposition())
    try:
        spent: dict[str, float] = defaultdict(float)
        encoder = service.searcher.encoder
        encoder.encode = timed(spent, "encode", encoder.encode)  # type: ignore[method-assign]
        search_run._fetch = timed(spent, "postgres", search_run._fetch)  # type: ignore[assignment]
        rows: dict[str, list[float]] = defaultdict(list)
        for rep in range(2):  # the first pass warms up caches and plans
            for item in items:
                body = {"query": item["query"], "mode": args.mode, "k": 10}
                if not args.no_filters and item.get("filters"):
                    body["filters"] = item["filters"]
                spent.clear()
                started = time.perf_counter()
                service.searcher.search(SearchRequest.model_validate(body), ANONYMOUS, cache=False)
                total = (time.perf_counter() - started) * 1000
                if rep:
                    rows["encode"].append(spent["encode"])
                    rows["postgres"].append(spent["postgres"])
                    rows["python"].append(total - spent["encode"] - spent["postgres"])
                    rows["total"].append(total)
    finally:
        stop_service(service)
    print(f"{len(items)} dev queries, mode {args.mode}, filters {'off' if args.no_filters else 'as labelled'}")
    print(f"{'share':<10}{'mean ms':>9}{'p50 ms':>9}{'of mean':>9}")
    mean_total = statistics.mean(rows["total"])
    for name, values in rows.items():
        mean = statistics.mean(values)
        print(f"{name:<10}{mean:>9.2f}{statistics.median(values):>9.2f}{mean / mean_total:>9.0%}")


if __name__ == "__main__":
    main()
