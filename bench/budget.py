"""Where a search's time goes: query encoding, PostgreSQL, and secrag's own Python, per request.

Runs every dev query once (after a warm-up pass) through the API's own search code in process (the
Service the app builds, caches off), one request at a time, and times:

- `encode`: the encoder's model run;
- `postgres`: every statement a search sends, on every connection: the pool's check and reset round
  trips, the lookups before the legs, the legs (two statements at once when the voter legs run aside,
  serving/search/side_legs.py) and the page's display fields. It is the database's work per search (its
  CPU on a busy server), summed over both connections;
- `pg waited`: the part of it the request waited for (the voter legs' statement overlaps the others');
- `python`: the rest of the request's time (analysis, planning, fusion, rescoring, the response model).

HTTP (uvicorn, routing, validation, JSON) is what bench/peer_compare.py's latency adds on top. `--statements`
adds each statement's mean time per search, by name (sql/queries/serving.sql) or by the legs it runs.
`--clients N` measures CPU per search at N concurrent clients instead (bench/lib/cpu.py says how).
"""

from __future__ import annotations

import argparse
import re
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from serving.access.keys import ANONYMOUS
from serving.api.app import start_service, stop_service
from serving.contract.requests import SearchRequest
from serving.observability.prometheus import Exposition
from serving.search.leg_runs import LegRuns, native
from serving.service import Service

from lib.api import api_settings
from lib.queries import DEV_QUERIES, load_items

LEG = re.compile(r"SELECT '(\w+)' AS leg")


class Clock:
    """Milliseconds spent per share of the current request, from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spent: dict[str, float] = defaultdict(float)
        self.statements: dict[str, float] = defaultdict(float)
        self.request_thread = threading.get_ident()
        self.in_legs = False  # the request thread is in LegRuns.rows (its whole time counts as waited)

    def add(self, share: str, ms: float) -> None:
        with self.lock:
            self.spent[share] += ms

    @contextmanager
    def timing(self, share: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(share, (time.perf_counter() - started) * 1000)


def statement_name(query: object, names: dict[str, str]) -> str:
    text = query if isinstance(query, str) else str(query)
    if text in names:
        return names[text]
    legs = LEG.findall(text) + [leg for leg in ("neighbours", "procedures") if f"'{leg}' AS leg" in text]
    if legs:
        return "legs: " + "+".join(sorted(set(legs)))
    return " ".join(text.split())[:40] or "(the pool's check)"


def instrument(clock: Clock, names: dict[str, str]) -> None:
    """Time every statement (psycopg's cursor execute) and the legs' wait."""

    def timed_execute(original: Callable[..., Any]) -> Callable[..., Any]:
        def execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:  # noqa: ANN401
            started = time.perf_counter()
            try:
                return original(self, query, params, **kwargs)
            finally:
                ms = (time.perf_counter() - started) * 1000
                clock.add("postgres", ms)
                with clock.lock:
                    clock.statements[statement_name(query, names)] += ms
                if threading.get_ident() == clock.request_thread and not clock.in_legs:
                    clock.add("pg waited", ms)

        return execute

    psycopg.Cursor.execute = timed_execute(psycopg.Cursor.execute)  # type: ignore[method-assign]  # ClientCursor's too
    rows = LegRuns.rows

    def timed_rows(self: LegRuns, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        clock.in_legs = True
        try:
            with clock.timing("pg waited"):
                return rows(self, *args, **kwargs)
        finally:
            clock.in_legs = False

    LegRuns.rows = timed_rows  # type: ignore[method-assign]


def search_bodies(no_filters: bool) -> list[dict[str, Any]]:
    """Each dev query as a hybrid search, with its labelled filters unless `no_filters`."""
    items = load_items(DEV_QUERIES)
    kept = [{} if no_filters or not i.get("filters") else {"filters": i["filters"]} for i in items]
    return [{"query": i["query"], "k": 10} | f for i, f in zip(items, kept, strict=True)]


def statement_names(service: Service) -> dict[str, str]:
    """Each statement's text, and the same with PostgreSQL's own placeholders (serving/search/leg_runs.py), to its
    name."""
    names = {text: name for name, text in vars(service.searcher.statements).items() if isinstance(text, str)}
    return names | {native(text)[0]: name for text, name in names.items()}


def in_process_service(database_url: str) -> Service:
    """The API's Service in this process, the caches and the warm-up off: each search does all its work."""
    return start_service(api_settings(database_url).model_copy(update={"warm_up": False}), Exposition())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--no-filters", action="store_true")
    ap.add_argument("--statements", action="store_true", help="Also each statement's mean time per search.")
    ap.add_argument(
        "--clients",
        type=int,
        default=0,
        help="CPU per search at this many concurrent clients instead (lib/cpu.py: process and PostgreSQL).",
    )
    ap.add_argument("--rounds", type=int, default=2, help="With --clients: measured passes after one warm-up.")
    ap.add_argument("--shares", action="store_true", help="With --clients: where the CPU goes.")
    ap.add_argument("--planning", action="store_true", help="With --clients: each statement's planning time too.")
    args = ap.parse_args()
    if args.clients:
        from lib.cpu import report

        report(args)
        return
    bodies = search_bodies(args.no_filters)
    service = in_process_service(args.database_url)
    clock = Clock()
    instrument(clock, statement_names(service))
    rows: dict[str, list[float]] = defaultdict(list)
    per_statement: dict[str, float] = defaultdict(float)
    try:
        encoder = service.searcher.encoder
        encode = encoder.encode

        def timed_encode(*a: Any, **kw: Any) -> Any:  # noqa: ANN401
            with clock.timing("encode"):
                return encode(*a, **kw)

        encoder.encode = timed_encode  # type: ignore[method-assign]
        for rep in range(2):  # the first pass warms up caches and plans
            for body in bodies:
                clock.spent.clear()
                clock.statements.clear()
                started = time.perf_counter()
                service.searcher.search(SearchRequest.model_validate(body), ANONYMOUS, cache=False)
                total = (time.perf_counter() - started) * 1000
                if rep:
                    spent = dict(clock.spent)
                    for share in ("encode", "postgres", "pg waited"):
                        rows[share].append(spent.get(share, 0.0))
                    rows["python"].append(total - spent.get("encode", 0.0) - spent.get("pg waited", 0.0))
                    rows["total"].append(total)
                    for name, ms in clock.statements.items():
                        per_statement[name] += ms
    finally:
        stop_service(service)
    filters = "off" if args.no_filters else "as labelled"
    print(f"{len(bodies)} dev queries, hybrid, filters {filters}, voter legs aside while a core is idle")
    print(f"{'share':<10}{'mean ms':>9}{'p50 ms':>9}{'of total':>10}")
    mean_total = statistics.mean(rows["total"])
    for name, values in rows.items():
        mean = statistics.mean(values)
        print(f"{name:<10}{mean:>9.2f}{statistics.median(values):>9.2f}{mean / mean_total:>10.0%}")
    print("(postgres: every statement on every connection; pg waited: what the request waited for)")
    if args.statements:
        print(f"\n{'mean ms per search':>18}  statement")
        for name, ms in sorted(per_statement.items(), key=lambda kv: -kv[1]):
            print(f"{ms / len(bodies):>18.2f}  {name}")


if __name__ == "__main__":
    main()
