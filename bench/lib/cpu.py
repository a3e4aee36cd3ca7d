"""budget.py's measures, in process: one client's wall time by share, and CPU per search at N clients."""

from __future__ import annotations

import argparse
import os
import queue
import re
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
from pgvector.psycopg import register_vector

from serving.access.keys import ANONYMOUS
from serving.api.app import start_service, stop_service
from serving.contract.requests import SearchRequest
from serving.observability.prometheus import Exposition
from serving.search.leg_runs import LegRuns, native
from serving.service import Service

from lib.api import api_settings
from lib.queries import DEV_QUERIES, load_items

PLANNING = re.compile(r"Planning Time: ([0-9.]+) ms")
LEG = re.compile(r"SELECT '(\w+)' AS leg")


def backend_ns(pid: int) -> int:
    """CPU nanoseconds the process has run (the first field of /proc/<pid>/schedstat); 0 once it has exited."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])
    except FileNotFoundError:
        return 0


def search_bodies(no_filters: bool) -> list[dict[str, Any]]:
    """Each dev query as a hybrid search, with its labelled filters unless `no_filters`."""
    items = load_items(DEV_QUERIES)
    kept = [{} if no_filters or not i.get("filters") else {"filters": i["filters"]} for i in items]
    return [{"query": i["query"], "k": 10} | f for i, f in zip(items, kept, strict=True)]


def in_process_service(database_url: str) -> Service:
    """The API's Service in this process, the caches and the warm-up off: each search does all its work."""
    return start_service(api_settings(database_url).model_copy(update={"warm_up": False}), Exposition())


def statement_name(query: object, names: dict[str, str]) -> str:
    """A statement's name (sql/queries/serving.sql), or the legs it runs."""
    text = query if isinstance(query, str) else str(query)
    if text in names:
        return names[text]
    legs = LEG.findall(text) + [leg for leg in ("neighbours", "procedures") if f"'{leg}' AS leg" in text]
    if legs:
        return "legs: " + "+".join(sorted(set(legs)))
    return " ".join(text.split())[:40] or "(the pool's check)"


class Meter:
    """Per share and per statement, from any thread: with `wall`, one client's milliseconds (`spent`,
    `statements`); with `shares`, CPU nanoseconds (`cpu`, and each statement's `server` and `client`); the
    backends seen."""

    def __init__(self, shares: bool = False, wall: bool = False) -> None:
        self.shares, self.wall = shares, wall
        self.lock = threading.Lock()
        self.pids: set[int] = set()
        self.spent: dict[str, float] = defaultdict(float)
        self.statements: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, int] = defaultdict(int)
        self.server: dict[str, int] = defaultdict(int)
        self.client: dict[str, int] = defaultdict(int)
        self.captured: list[tuple[str, str, Any]] | None = None  # (name, text, params) while capturing
        self.local = threading.local()
        self.request_thread = threading.get_ident()
        self.in_legs = False  # the request thread is in LegRuns.rows (its whole time counts as waited)

    def add(self, table: dict[str, Any], name: str, amount: float) -> None:
        with self.lock:
            table[name] += amount

    def clear(self) -> None:
        with self.lock:
            for table in (self.cpu, self.server, self.client):
                table.clear()


def instrument(meter: Meter, service: Service) -> None:
    """Note every statement's backend and, with wall, its time (and the legs' wait, the encoder's); with shares,
    its CPU on both sides, the pool's reset and check and the encoder's model runs."""
    original = psycopg.Cursor.execute  # ClientCursor's too
    names = {text: name for name, text in vars(service.searcher.statements).items() if isinstance(text, str)}
    names |= {native(text)[0]: name for text, name in names.items()}  # with PostgreSQL's own placeholders

    def execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:  # noqa: ANN401
        pid = self.connection.info.backend_pid
        if pid not in meter.pids:
            with meter.lock:
                meter.pids.add(pid)
        if not meter.shares and not meter.wall:
            return original(self, query, params, **kwargs)
        name = getattr(meter.local, "name", None) or statement_name(query, names)
        if query == service.sessions.generic_plan:  # the next statement of its round trip is planned once
            meter.local.generic = True
        elif getattr(meter.local, "generic", False) and name.startswith(("legs:", "result_rows")):
            name, meter.local.generic = f"{name} (planned once)", False
        started, client0, server0 = time.perf_counter(), time.thread_time_ns(), backend_ns(pid) if meter.shares else 0
        try:
            return original(self, query, params, **kwargs)
        finally:
            if meter.wall:
                ms = (time.perf_counter() - started) * 1000
                meter.add(meter.spent, "postgres", ms)
                meter.add(meter.statements, name, ms)
                if threading.get_ident() == meter.request_thread and not meter.in_legs:
                    meter.add(meter.spent, "pg waited", ms)
            if meter.shares:
                server, client = backend_ns(pid) - server0, time.thread_time_ns() - client0
                meter.add(meter.server, name, server)
                meter.add(meter.client, name, client)
            captured = meter.captured
            if captured is not None and name.startswith(("legs:", "result_rows")) and params is not None:
                with meter.lock:
                    captured.append((name, str(query), list(params) if isinstance(params, list) else params))

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]

    def timed(fn: Callable[..., Any], share: str, name: str | None = None, legs: bool = False) -> Callable[..., Any]:
        """`fn` counted in the share: with shares its thread's CPU (its statements named), else wall milliseconds
        (`legs`: the request waits in it, its statements aside)."""

        def run(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
            meter.local.name, meter.in_legs = name, meter.in_legs or legs
            started, cpu0 = time.perf_counter(), time.thread_time_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                meter.local.name, meter.in_legs = None, meter.in_legs and not legs
                if meter.shares:
                    meter.add(meter.cpu, share, time.thread_time_ns() - cpu0)
                else:
                    meter.add(meter.spent, share, (time.perf_counter() - started) * 1000)

        return run

    encoder = service.searcher.encoder
    if meter.wall:
        LegRuns.rows = timed(LegRuns.rows, "pg waited", legs=True)  # type: ignore[method-assign]
        encoder.encode = timed(encoder.encode, "encode")  # type: ignore[method-assign]
    if meter.shares:
        pool = service.pool
        pool._reset = timed(pool._reset, "pool reset (client)", "(the pool's reset)")
        if pool._check is not None:
            pool._check = timed(pool._check, "pool check (client)", "(the pool's check)")
        encoder._run = timed(encoder._run, "encode (leader thread)", "(encoder)")


def one_client(args: argparse.Namespace) -> None:
    """budget.py's one-client report (its arguments: database_url, no_filters, statements)."""
    bodies = search_bodies(args.no_filters)
    service = in_process_service(args.database_url)
    meter = Meter(wall=True)
    instrument(meter, service)
    rows: dict[str, list[float]] = defaultdict(list)
    try:
        for rep in range(2):  # the first pass warms up caches and plans
            meter.statements.clear()
            for body in bodies:
                meter.spent.clear()
                started = time.perf_counter()
                service.searcher.search(SearchRequest.model_validate(body), ANONYMOUS, cache=False)
                total = (time.perf_counter() - started) * 1000
                if rep:
                    spent = dict(meter.spent)
                    for share in ("encode", "postgres", "pg waited"):
                        rows[share].append(spent.get(share, 0.0))
                    rows["python"].append(total - spent.get("encode", 0.0) - spent.get("pg waited", 0.0))
                    rows["total"].append(total)
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
        for name, ms in sorted(meter.statements.items(), key=lambda kv: -kv[1]):
            print(f"{ms / len(bodies):>18.2f}  {name}")


def measured_pass(service: Any, bodies: list[dict[str, Any]], clients: int) -> int:  # noqa: ANN401
    """Search every body once from `clients` threads; returns the request threads' CPU (ns)."""
    todo: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
    for body in bodies:
        todo.put(body)

    def client() -> int:
        started = time.thread_time_ns()
        while True:
            try:
                body = todo.get_nowait()
            except queue.Empty:
                return time.thread_time_ns() - started
            service.searcher.search(SearchRequest.model_validate(body), ANONYMOUS, cache=False)

    with ThreadPoolExecutor(clients, thread_name_prefix="client") as pool:  # each thread one client to the end
        return sum(f.result() for f in [pool.submit(client) for _ in range(clients)])


def planning_ms(url: str, captured: list[tuple[str, str, Any]]) -> dict[str, list[float]]:
    """Each captured statement planned again (EXPLAIN SUMMARY, the reader's session settings): ms by name."""
    by_name: dict[str, list[float]] = defaultdict(list)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(
            "SELECT set_config('plan_cache_mode', 'force_custom_plan', false), set_config('jit', 'off', false),"
            " set_config('max_parallel_workers_per_gather', '0', false)"
        )
        for name, text, params in (c for c in captured if not c[0].endswith("(planned once)")):
            rows = psycopg.RawCursor(conn).execute(f"EXPLAIN (SUMMARY ON, COSTS OFF) {text}", params).fetchall()
            found = PLANNING.search("\n".join(r[0] for r in rows))
            if found:
                by_name[name].append(float(found.group(1)))
    return by_name


def report(args: argparse.Namespace) -> None:
    """budget.py's --clients report (its arguments: database_url, clients, rounds, no_filters, shares, planning)."""
    bodies = search_bodies(args.no_filters)
    service = in_process_service(args.database_url)
    meter = Meter(shares=args.shares or args.planning)
    instrument(meter, service)
    try:
        measured_pass(service, bodies, args.clients)  # warm-up: models, caches of the catalog, plans
        meter.clear()
        searches = len(bodies) * args.rounds
        before = {pid: backend_ns(pid) for pid in meter.pids}
        process0, wall0 = time.process_time_ns(), time.perf_counter()
        request_ns, kept = 0, [] if args.planning else None
        meter.captured = kept  # the first measured pass's statements
        for _ in range(args.rounds):
            request_ns += measured_pass(service, bodies, args.clients)
            meter.captured = None
        process_ns, wall = time.process_time_ns() - process0, time.perf_counter() - wall0
        after = {pid: backend_ns(pid) for pid in meter.pids}
        gone = [pid for pid in before if after.get(pid, 0) == 0]
        postgres_ns = sum(after[pid] - before.get(pid, 0) for pid in after if after[pid])
    finally:
        stop_service(service)
    ms = 1e-6 / searches
    filters = "off" if args.no_filters else "as labelled"
    print(
        f"{len(bodies)} dev queries x {args.rounds} rounds, hybrid, filters {filters}, "
        f"{args.clients} clients, caches off, {os.cpu_count()} cores"
    )
    print(f"CPU ms per search: process {process_ns * ms:.2f}, postgres {postgres_ns * ms:.2f}, ", end="")
    print(f"total {(process_ns + postgres_ns) * ms:.2f}; {searches / wall:.1f} searches/s ({len(after)} backends)")
    if gone:
        print(f"(warning: {len(gone)} backends exited during the run: their CPU is not counted)")
    if not meter.shares:
        return
    print(f"\n{'CPU ms/search':>14}  share")
    shares = dict(meter.cpu)
    # a share's own statements (the pool's reset and check) are in the share
    statements_client = sum(ns for name, ns in meter.client.items() if not name.startswith("("))
    print(f"{request_ns * ms:>14.2f}  request threads (all of it below)")
    for share, ns in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"{ns * ms:>14.2f}    {share}")
    print(f"{statements_client * ms:>14.2f}    statements (client)")
    rest = request_ns - statements_client - sum(shares.values())
    print(f"{rest * ms:>14.2f}    the rest: analysis, planning of the legs, fusion, rescoring, the response")
    print(f"{(process_ns - request_ns) * ms:>14.2f}  other threads (ONNX's, the side legs', the pool's)")
    print(f"{sum(meter.server.values()) * ms:>14.2f}  postgres, by statement:")
    for name, ns in sorted(meter.server.items(), key=lambda kv: -kv[1]):
        print(f"{ns * ms:>14.2f}    {name} (client {meter.client[name] * ms:.2f})")
    if args.planning:
        planned = planning_ms(args.database_url, kept or [])
        print(f"\n{'planning ms/search':>18}  statement planned for its values (EXPLAIN SUMMARY, one pass)")
        for name, values in sorted(planned.items(), key=lambda kv: -sum(kv[1])):
            print(f"{sum(values) / len(bodies):>18.2f}  {name} (median {statistics.median(values):.3f} a run)")
