"""PostgreSQL's own time per search, by statement and by planning against execution, as the server reports it.

    python bench/pg_parts.py --database-url postgresql://...secrag_bench... [--no-filters] [--given-neighbours]

Runs every dev query once through the API's own search code in process (caches off, every leg in one
statement), and after each statement runs the same statement again under EXPLAIN (ANALYZE, SUMMARY, TIMING
OFF), adding up its planning and execution time: the legs' statement, and the page's display fields with
their snippets and without them. bench/budget.py times the same statements from the client, so its figures
also hold each round trip and psycopg's part.

`--given-neighbours` hands the neighbours leg its nearest chunks the way the held sources' vectors hand them
to the procedures leg (`nb_near_docs`, `nb_near_sims`): exact, over every public chunk, taken in this process
and left out of the figures. What the legs' statement then spends is what PostgreSQL would spend with the
whole-graph walk moved out of it. `--without neighbours,procedures` leaves those voter legs out of every
search (quality drops: this measures what they cost, not a way to run).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import time
from collections import defaultdict
from typing import Any

import numpy as np
import psycopg

from serving.access.keys import ANONYMOUS
from serving.api.app import stop_service
from serving.contract.requests import SearchRequest
from serving.search import fused_legs, leg_runs, leg_shapes
from serving.search.source_vectors import unit_rows

from budget import dev_queries, in_process_service

PUBLIC_VECTORS = """
SELECT c.doc_id, vector_send(e.vector) FROM embeddings e
JOIN chunks c ON c.content_hash = e.content_hash JOIN documents d ON d.doc_id = c.doc_id
WHERE e.model_id = %s AND d.tenant IS NULL AND cardinality(d.acl_users) = 0 AND cardinality(d.acl_groups) = 0
"""


class Parts:
    """Planning and execution milliseconds per statement kind, from EXPLAIN's summary."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = defaultdict(float)

    def explain(self, conn: psycopg.Connection[Any], statement: str, params: dict[str, Any], kind: str) -> None:
        text, names = leg_runs.native(statement)
        with psycopg.RawCursor(conn) as cur:
            cur.execute("EXPLAIN (ANALYZE, SUMMARY, TIMING OFF, BUFFERS OFF) " + text, [params[n] for n in names])
            out = "\n".join(row[0] for row in cur.fetchall())
        for part in ("Planning", "Execution"):
            found = re.search(rf"{part} Time: ([\d.]+)", out)
            self.ms[f"{kind}: {part.lower()}"] += float(found.group(1)) if found else 0.0


def give_neighbours(dimensions: int) -> dict[str, Any]:
    """Patch the leg shaper so the neighbours leg gets its nearest chunks from this process (see above)."""
    held: dict[str, Any] = {"matrix": None, "docs": None, "ms": 0.0, "products": 0}
    original = leg_shapes.LegShaper.held_nearest

    def held_nearest(
        self: Any,
        conn: Any,
        params: dict[str, Any],
        walk: Any,
        model_id: str,
        voters: list[str],  # noqa: ANN401
        *,
        fresh: bool = False,
        sentence: Any = None,  # noqa: ANN401
    ) -> Any:  # noqa: ANN401
        shaped = original(self, conn, params, walk, model_id, voters, fresh=fresh, sentence=sentence)
        if "neighbours" not in voters or params.get("nb_own") or params["qvec"] is None or params["nb_sources"]:
            return shaped
        if held["matrix"] is None:
            with conn.cursor(binary=True) as cur:
                rows = cur.execute(PUBLIC_VECTORS, [model_id]).fetchall()
            held["docs"] = np.array([r[0] for r in rows], dtype=object)
            held["matrix"] = unit_rows([r[1] for r in rows], dimensions)
        started = time.perf_counter()
        sims = held["matrix"] @ np.asarray(params["qvec"], dtype=np.float32)
        k = min(params["nb_chunks"], len(sims) - 1)
        top = np.argpartition(-sims, k)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        held["ms"] += (time.perf_counter() - started) * 1000
        held["products"] += 1
        params["nb_own"] = True
        params["nb_near_docs"], params["nb_near_sims"] = list(held["docs"][top]), [float(s) for s in sims[top]]
        return shaped

    leg_shapes.LegShaper.held_nearest = held_nearest  # type: ignore[method-assign]
    return held


def leave_out(legs: list[str]) -> None:
    """Patch the searcher so the plan of every search gives these voter legs no weight (they do not run)."""
    unknown = set(legs) - {"neighbours", "procedures"}
    if unknown:
        raise SystemExit(f"--without takes neighbours and procedures, not {sorted(unknown)}")
    original = fused_legs.fused_window
    zero = {f"w_{leg}": 0.0 for leg in legs}

    def fused(runs: Any, config: Any, conn: Any, req: Any, plan: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        return original(runs, config, conn, req, dataclasses.replace(plan, **zero), *args, **kwargs)

    fused_legs.fused_window = fused


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--no-filters", action="store_true")
    ap.add_argument("--given-neighbours", action="store_true")
    ap.add_argument("--without", default="", help="Voter legs to leave out: neighbours, procedures (comma-separated).")
    args = ap.parse_args()
    items = dev_queries()
    service = in_process_service(args.database_url, parallel_legs=False)
    held = give_neighbours(service.searcher.encoder.dimensions) if args.given_neighbours else None
    if args.without:
        leave_out([leg.strip() for leg in args.without.split(",") if leg.strip()])
    parts = Parts()
    fetch = leg_runs.fetch  # the legs (serving/search/leg_runs.py) and the page go through it
    statements = service.searcher.statements
    counting = [False]  # the second pass is counted

    def explained(
        conn: psycopg.Connection[Any], statement: str, params: dict[str, Any], name: str
    ) -> list[dict[str, Any]]:
        rows = fetch(conn, statement, params, name)
        if counting[0]:
            if statement is statements.result_rows:
                parts.explain(conn, statement, params, "page")
                parts.explain(conn, statement, {**params, "with_snippets": False}, "page without snippets")
            else:
                parts.explain(conn, statement, params, "legs")
        return rows

    fused_legs.fetch = explained  # its own name of leg_runs.fetch (the page)
    leg_runs.fetch = explained
    try:
        for counting[0] in (False, True):  # the first pass warms up caches
            for item in items:
                body = {"query": item["query"], "mode": "hybrid", "k": 10}
                if not args.no_filters and item.get("filters"):
                    body["filters"] = item["filters"]
                service.searcher.search(SearchRequest.model_validate(body), ANONYMOUS, cache=False)
    finally:
        stop_service(service)
    given = (", the neighbours' nearest given" if held else "") + (f", without {args.without}" if args.without else "")
    print(f"{len(items)} dev queries, hybrid, filters {'off' if args.no_filters else 'as labelled'}{given}")
    print(f"{'mean ms per search':>18}  part")
    for name, ms in parts.ms.items():
        print(f"{ms / len(items):>18.3f}  {name}")
    if held and held["products"]:
        per_pass, each = held["products"] / 2, held["ms"] / held["products"]
        print(f"(the given nearest: {per_pass:.0f} products a pass, {each:.2f} ms each)")


if __name__ == "__main__":
    main()
