"""GET /v1/stats cost: the kept per-source counts (migration 0007) against counting the rows live.

    python bench/stats.py --database-url postgresql://...secrag_bench... [--repeats 30]

Times serving.reads.stats.collect_stats on one connection, both ways, over the same store (p50 and p95 of
--repeats calls after one warm-up), then GET /v1/stats through the API in process.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable

from fastapi.testclient import TestClient

from secrag.db import database
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.reads.stats import LiveCounts, collect_stats
from serving.search.statements import compose
from serving.settings import ServingSettings


def _timed(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    q = Queries(sql_dir(), "serving")
    with database.connect(args.database_url, autocommit=True) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sources ORDER BY name").fetchall()]
        public = frozenset(r[0] for r in conn.execute(q.public_source_names).fetchall())
        model = (conn.execute(q.active_model).fetchone() or ("all-MiniLM-L6-v2",))[0]
        chunks = (conn.execute("SELECT count(*) FROM chunks").fetchone() or (0,))[0]
        print(f"{len(names)} sources ({len(public)} online), {chunks} chunks, model {model}")
        dimensions = 384  # the registered MiniLM models'; the counts read no vector
        live = LiveCounts(compose(q, model, dimensions), {"tenant": None, "user": None, "groups": []})
        for label, kept in (("counted live (before)", frozenset[str]()), ("kept counts (after)", public)):
            call = functools.partial(collect_stats, conn, q, names, model, {}, kept, live)
            p50, p95 = _timed(call, args.repeats)
            print(f"collect_stats, {label:<22} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")
    settings = ServingSettings(  # type: ignore[call-arg]
        _env_file=None, database_url=args.database_url, mcp_enabled=False, anonymous_rate_per_minute=0
    )
    with TestClient(create_app(settings)) as api:
        p50, p95 = _timed(lambda: api.get("/v1/stats").raise_for_status(), args.repeats)
        print(f"GET /v1/stats (in process, anonymous) p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")


if __name__ == "__main__":
    main()
