"""Artefact lookups (GET /v1/lookup): latency p50/p90 and the share of the snapshot's identifiers found.

Publishes the LOLDrivers, LOLBAS, GTFOBins and HijackLibs snapshots (no vectors: a lookup needs none) into a
fresh database, then asks the API in process (FastAPI's test client, the reader role and its access check):

  python bench/lookup.py [--snapshot ../shared/upstream] [--server-url postgresql://...]

Without --server-url an embedded server is started under .secrag/bench (and stopped after). The identifiers
expected are read from the upstream files with a full YAML load, not from the parsers: every LOLDrivers
sample hash (MD5, SHA-1, SHA-256, authenticode), LOLBAS names and full paths, GTFOBins names, HijackLibs DLL
names and vulnerable executables' paths and SHA-256 hashes. Each must find the record of its file.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from psycopg import sql

from pipeline.chunking import ChunkConfig
from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from pipeline.store import SourceRow, Store
from secrag.db import database, embedded, migrations
from secrag.files import safe_yaml
from secrag.files.package_data import sql_dir
from secrag.settings import REPO_ROOT
from serving.api.app import create_app
from serving.contract.lookup_models import MAX_LOOKUP_VALUES
from serving.settings import ServingSettings

SOURCES = ("loldrivers", "lolbas", "gtfobins", "hijacklibs")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def expected(snapshot: Path) -> Iterator[tuple[str, str, str]]:
    """(what, value, doc id of the record that must hold it), from the upstream files."""
    for path in sorted((snapshot / "loldrivers" / "yaml").glob("*.yaml")):
        doc = safe_yaml.load(path.read_text(encoding="utf-8"))
        for sample in doc.get("KnownVulnerableSamples") or []:
            hashes = [sample.get(k) for k in ("MD5", "SHA1", "SHA256")]
            hashes += list((sample.get("Authentihash") or {}).values())
            for value in hashes:
                if value and str(value).strip():
                    yield "loldrivers hash", str(value).strip(), f"loldrivers:yaml/{path.name}"
    for path in sorted((snapshot / "lolbas" / "yml").rglob("*.yml")):
        rel = path.relative_to(snapshot / "lolbas").as_posix()
        if rel.startswith("yml/HonorableMentions/"):
            continue
        doc = safe_yaml.load(path.read_text(encoding="utf-8"))
        yield "lolbas name", str(doc["Name"]), f"lolbas:{rel}"
        for item in doc.get("Full_Path") or []:
            if isinstance(item, dict) and item.get("Path") and str(item["Path"]).strip().lower() != "no default path":
                yield "lolbas path", str(item["Path"]), f"lolbas:{rel}"
    for path in sorted((snapshot / "gtfobins" / "_gtfobins").iterdir()):
        yield "gtfobins name", path.name, f"gtfobins:_gtfobins/{path.name}"
    for path in sorted((snapshot / "hijacklibs" / "yml").rglob("*.yml")):
        rel = path.relative_to(snapshot / "hijacklibs").as_posix()
        doc = safe_yaml.load(path.read_text(encoding="utf-8"))
        yield "hijacklibs name", str(doc["Name"]), f"hijacklibs:{rel}"
        for executable in doc.get("VulnerableExecutables") or []:
            yield "hijacklibs path", str(executable["Path"]), f"hijacklibs:{rel}"
            for value in executable.get("SHA256") or []:
                yield "hijacklibs hash", str(value), f"hijacklibs:{rel}"


def publish(url: str, snapshot: Path) -> dict[str, float]:
    store, registry, seconds = Store(sql_dir()), default_registry(), {}
    with database.connect(url, autocommit=True) as conn:
        for name in SOURCES:
            records = parse_source(registry[name], snapshot / name, version="bench").records
            store.register_source(conn, SourceRow(name=name, kind="online", description=name))
            result = store.publish(
                conn, source=name, version="bench", records=records, lookup={}, chunking=ChunkConfig()
            )
            seconds[name] = result.seconds
            sys.stdout.write(
                f"published {name}: {result.parsed} records, {result.artefacts} artefacts, {result.seconds:.1f} s\n"
            )
    return seconds


def ask(client: TestClient, values: list[str]) -> tuple[float, dict[str, set[str]]]:
    started = time.perf_counter()
    response = client.get("/v1/lookup", params={"value": values, "limit": 100})
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return elapsed, {r["value"]: {d["doc_id"] for d in r["records"]} for r in body["results"]}


def measure(url: str, snapshot: Path, sample: int) -> None:
    wanted = list(expected(snapshot))
    settings = ServingSettings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=url,
        warm_up=False,
        result_cache_size=0,
        mcp_enabled=False,
        anonymous_rate_per_minute=0,
        rate_per_minute=0,
        anonymous_heavy_concurrency=0,
        heavy_concurrency=0,
    )
    with TestClient(create_app(settings)) as client:
        by_what: dict[str, list[int]] = {}
        values = sorted({v for _, v, _ in wanted})
        holders: dict[str, set[str]] = {}
        batch_ms = []
        for start in range(0, len(values), MAX_LOOKUP_VALUES):
            elapsed, found = ask(client, values[start : start + MAX_LOOKUP_VALUES])
            batch_ms.append(elapsed)
            holders |= found
        for what, value, doc_id in wanted:
            by_what.setdefault(what, [0, 0])
            by_what[what][0] += doc_id in holders.get(value, set())
            by_what[what][1] += 1
        for what, (hit, total) in sorted(by_what.items()):
            sys.stdout.write(f"{what:18} found {hit:6d} of {total:6d} ({hit / total:.1%})\n")
        hashes = {v for w, v, _ in wanted if w == "loldrivers hash"}
        found_hashes = {v for w, v, d in wanted if w == "loldrivers hash" and d in holders.get(v, set())}
        sys.stdout.write(f"distinct LOLDrivers hashes found: {len(found_hashes)} of {len(hashes)}\n")
        random.seed(7)
        single = random.sample(values, min(sample, len(values)))
        for value in single[:50]:  # warm the pool and the plan cache
            ask(client, [value])
        one_ms = [ask(client, [value])[0] for value in single]
        sys.stdout.write(
            f"one value per request ({len(one_ms)}): p50 {percentile(one_ms, 50):.2f} ms, "
            f"p90 {percentile(one_ms, 90):.2f} ms\n"
            f"{MAX_LOOKUP_VALUES} values per request ({len(batch_ms)}): p50 {percentile(batch_ms, 50):.1f} ms, "
            f"p90 {percentile(batch_ms, 90):.1f} ms\n"
        )
        for query in ("certutil.exe", "E9BCA8F4B8C60688EACC7D18C6BA7777C181BB84", "lsass memory dump"):
            times = []
            for _ in range(21):
                started = time.perf_counter()
                hits = client.post("/v1/search", json={"query": query, "mode": "fts", "k": 5}).json()["results"]
                times.append((time.perf_counter() - started) * 1000)
            first = hits[0]["doc_id"] if hits else None
            sys.stdout.write(f"fts search {query!r}: p50 {percentile(times, 50):.1f} ms, first {first}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshot", type=Path, default=REPO_ROOT.parent / "shared" / "upstream")
    parser.add_argument("--server-url", default=None, help="A PostgreSQL server to create the database on.")
    parser.add_argument("--sample", type=int, default=1000, help="Single-value lookups timed.")
    args = parser.parse_args()
    pgdata = REPO_ROOT / ".secrag" / "bench" / "pgdata"
    server = args.server_url or embedded.start(pgdata)
    name = f"secrag_bench_lookup_{uuid.uuid4().hex[:8]}"
    admin = database.with_database(server, "postgres")
    with database.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = database.with_database(server, name)
    try:
        with database.connect(url, autocommit=True) as conn:
            database.check_requirements(conn)
            migrations.migrate(conn, sql_dir())
        publish(url, args.snapshot)
        measure(url, args.snapshot, args.sample)
    finally:
        with database.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if args.server_url is None:
            embedded.stop(pgdata)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
