"""Time to searchable through the production topology, and what frequent probes and the change feed cost.

(a) `secrag run` on a fresh data directory whose SECRAG_UPSTREAM_MIRROR holds the measured sources (sigma,
    stratus_red_team, cisa_kev, and mitre_attack for the lookup); once converged, per kind one new record is
    committed to the mirror as upstream would, and each stage is timed from the commit: noticed, run queued,
    started, published, embedded (Dagster's GraphQL), first full-text and vector hit (the API).
(b) GET /v1/changes latency and (c) bytes per change entry, on the store (a) left (--feed-only: only these).
(d) One hour of conditional probes of the release and feed sources at their default intervals against a
    loopback server of the mirror, one upstream change mid-hour: requests and 304s per source (--probes-only).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for the tests' mirror helpers
from pipeline.polling import poll_intervals  # noqa: E402
from pipeline.probe_cursor import decode_cursor, encode_cursor  # noqa: E402
from pipeline.sources.interface import UpstreamVersion  # noqa: E402
from pipeline.sources.mirror import Mirror, build_mirror  # noqa: E402
from pipeline.sources.probes import probe  # noqa: E402
from pipeline.sources.registry import default_registry  # noqa: E402
from pipeline.sources.upstream import UpstreamConfig  # noqa: E402
from secrag.db import database, embedded  # noqa: E402
from secrag.settings import Settings  # noqa: E402
from secrag_cli.processes import stop_group  # noqa: E402
from tests.plugins.upstream import FAST_RETRIES, LoopbackPolicy, LoopbackServer, serve_mirror  # noqa: E402

from lib.processes import SECRAG, daemon_healthy, free_port, get, graphql, location_loaded, serving  # noqa: E402
from lib.table import print_table  # noqa: E402
from lib.timing import percentile  # noqa: E402
from mirror_edits import new_kev_entry, new_sigma_rule, new_stratus_technique  # noqa: E402

KINDS = {"commit": "sigma", "release": "stratus_red_team", "feed": "cisa_kev"}
LOOKUP_SOURCE = "mitre_attack"
STAGES = ("noticed", "run_queued", "run_started", "published", "embedded", "fts_hit", "vector_hit")
ACTIVE_RUNS = (
    "{ runsOrError(filter: {statuses: [QUEUED, NOT_STARTED, STARTING, STARTED]}) "
    "{ ... on Runs { results { runId } } } }"
)
MATERIALIZATION = """query($key: AssetKeyInput!) { assetOrError(assetKey: $key) { ... on Asset {
  assetMaterializations(limit: 1) { runId metadataEntries { label
    ... on TimestampMetadataEntry { timestamp } ... on TextMetadataEntry { text } } } } } }"""


def say(text: str) -> None:
    print(text, flush=True)


def snapshot_of(upstream: Path, names: list[str], target: Path) -> Path:
    """A snapshot folder holding only these sources' folders (links to the real ones)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in [*names, "MANIFEST.json"]:
        link = target / name
        if not link.exists():
            link.symlink_to(upstream / name)
    return target


def run_env(data_dir: Path, snapshot: Path, model_cache_dir: Path | None) -> dict[str, str]:
    """`secrag run`'s environment: this one's without SECRAG_*, the bench's data and mirror, anonymous rates off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env.update(SECRAG_DATA_DIR=str(data_dir / "data"), SECRAG_UPSTREAM_MIRROR=str(snapshot), HF_HUB_OFFLINE="1")
    env.update(SECRAG_ANONYMOUS_RATE_PER_MINUTE="0")  # the bench polls the API twice a second
    if model_cache_dir:
        env["SECRAG_MODEL_CACHE_DIR"] = str(model_cache_dir.resolve())
    return env


def wait_converged(proc: subprocess.Popen[bytes], url: str, dagster: str, sources: list[str], timeout: float) -> str:
    seconds = wait_for("convergence", lambda: converged(url, dagster, sources), proc, timeout)
    say(f"converged in {seconds:.0f} s")
    return url


def wait_healthy(proc: subprocess.Popen[bytes], dagster: str, api: str) -> None:
    ready = lambda: (get(f"{api}/readyz") == 200 and location_loaded(dagster) and daemon_healthy(dagster), "starting")  # noqa: E731
    wait_for("a healthy topology", ready, proc, 900)


def start(env: dict[str, str], workdir: Path, ports: dict[str, int]) -> subprocess.Popen[bytes]:
    args = ["run", "--dagster-port", str(ports["dagster"]), "--api-port", str(ports["api"])]
    args += ["--code-server-port", str(ports["code"])]
    log = (workdir / "run.log").open("ab")
    return subprocess.Popen([*SECRAG, *args], env=env, cwd=workdir, stdout=log, stderr=log, start_new_session=True)


def converged(url: str, dagster: str, sources: list[str]) -> tuple[bool, str]:
    """Every source published, every chunk of the active model embedded, no run queued or running."""
    with database.connect(url) as conn:
        published = dict(conn.execute("SELECT name, current_version FROM sources").fetchall())
        missing = conn.execute(
            "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e JOIN embedding_models m "
            "ON m.model_id = e.model_id AND m.active WHERE e.content_hash = c.content_hash)"
        ).fetchone()[0]
        active = conn.execute("SELECT count(*) FROM embedding_models WHERE active").fetchone()[0]
    runs = ((graphql(dagster, ACTIVE_RUNS).get("runsOrError") or {}).get("results")) or []
    waiting = [s for s in sources if not published.get(s)]
    state = f"unpublished {waiting}, chunks without vectors {missing}, active model {active}, runs {len(runs)}"
    return (not waiting and not missing and active == 1 and not runs), state


def wait_for(what: str, check: Callable[[], tuple[bool, str]], proc: subprocess.Popen[bytes], timeout: float) -> float:
    started = time.monotonic()
    last = ""
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"secrag run exited with {proc.returncode} while waiting for {what}")
        done, state = check()
        if done:
            return time.monotonic() - started
        if state != last and int(time.monotonic() - started) % 60 < 5:
            say(f"  waiting for {what} ({time.monotonic() - started:.0f} s): {state}")
            last = state
        if time.monotonic() - started > timeout:
            raise SystemExit(f"no {what} after {timeout:.0f} s: {state}")
        time.sleep(5)


CHANGES = {"commit": new_sigma_rule, "feed": new_kev_entry, "release": new_stratus_technique}


def _search(api: str, source: str, query: str, mode: str) -> list[dict[str, Any]]:
    body = json.dumps({"query": query, "mode": mode, "k": 10, "filters": {"sources": [source]}}).encode()
    request = urllib.request.Request(f"{api}/v1/search", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return list(json.load(response).get("results") or [])
    except OSError:
        return []


def _materialized(dagster: str, key: list[str]) -> dict[str, Any]:
    found = graphql(dagster, MATERIALIZATION, {"key": {"path": key}})
    events = (found.get("assetOrError") or {}).get("assetMaterializations") or []
    if not events:
        return {}
    entries = {e["label"]: e.get("timestamp", e.get("text")) for e in events[0]["metadataEntries"]}
    return {"run_id": events[0]["runId"], **entries}


def time_change(kind: str, mirror: Mirror, url: str, api: str, dagster: str, timeout: float) -> dict[str, Any]:
    source = KINDS[kind]
    token = uuid.uuid4().hex[:8]
    committed = time.time()
    title, commit = CHANGES[kind](mirror, token)
    stamps: dict[str, float] = {}
    version = None
    while len(stamps) < len(STAGES) and time.time() - committed < timeout:
        with database.connect(url) as conn:
            row = conn.execute(
                "SELECT last_seen_version, seen_since, current_version FROM sources WHERE name = %s", [source]
            ).fetchone()
        if row and row[0] and row[1] and row[1].timestamp() >= committed - 1 and "noticed" not in stamps:
            version, stamps["noticed"] = row[0], row[1].timestamp()
        if version and row and row[2] == version and "published" not in stamps:
            meta = _materialized(dagster, ["sources", source])
            if meta.get("version") == version:
                for stage in ("run_queued", "run_started", "published"):
                    if meta.get(f"{stage}_at"):
                        stamps[stage] = float(meta[f"{stage}_at"])
        if "published" in stamps and "embedded" not in stamps:
            meta = _materialized(dagster, ["embeddings", source])
            if meta.get("embedded_at") and float(meta["embedded_at"]) >= stamps["published"]:
                stamps["embedded"] = float(meta["embedded_at"])
        if "fts_hit" not in stamps and any(token in (r.get("title") or "") for r in _search(api, source, token, "fts")):
            stamps["fts_hit"] = time.time()
        if "vector_hit" not in stamps and any(r.get("title") == title for r in _search(api, source, title, "vector")):
            stamps["vector_hit"] = time.time()
        time.sleep(0.5)
    return {"kind": kind, "source": source, "commit": commit, "version": version, "committed": committed, **stamps}


def report_stages(results: list[dict[str, Any]], intervals: dict[str, int]) -> None:
    say("\n(a) time from the upstream commit to each stage, seconds")
    rows = [
        [r["kind"], r["source"], intervals[r["source"]], *(r[s] - r["committed"] if s in r else None for s in STAGES)]
        + [r["vector_hit"] - r["noticed"] if "vector_hit" in r and "noticed" in r else None]
        for r in results
    ]
    print_table(["kind", "source", "interval", *STAGES, "after probe"], rows)


def changes_latency(api: str, rounds: int) -> None:
    say("\n(b) GET /v1/changes latency (ms), on the first build's history")
    cases = {
        "newest 100": {"limit": 100},
        "newest 1000": {"limit": 1000},
        "sigma, 100": {"sources": "sigma", "limit": 100},
        "since a day ago": {"since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 86400))},
    }
    rows: list[list[object]] = []
    for name, params in cases.items():
        timings = []
        for _ in range(rounds):
            started = time.perf_counter()
            with urllib.request.urlopen(f"{api}/v1/changes?{urllib.parse.urlencode(params)}", timeout=30) as r:
                r.read()
            timings.append((time.perf_counter() - started) * 1000)
        rows.append([name, percentile(timings, 50), percentile(timings, 95), rounds])
    print_table(["request", "p50", "p95", "requests"], rows)


def changes_storage(url: str) -> None:
    say("\n(c) change history storage")
    with database.connect(url) as conn:
        total = conn.execute("SELECT pg_total_relation_size('document_changes')").fetchone()[0]
        rows = conn.execute("SELECT source, count(*) FROM document_changes GROUP BY source ORDER BY source").fetchall()
    entries = sum(n for _, n in rows)
    say(f"  {entries} entries, {total / 1e6:.1f} MB with indexes: {total / max(entries, 1):.0f} bytes an entry")
    print_table(["source", "entries"], rows)


def feed_figures(data_dir: Path, rounds: int) -> None:
    """(b) and (c) on the store a run of this bench left, served by `secrag serve` alone."""
    settings = Settings(_env_file=None, data_dir=data_dir / "data")
    url = database.database_url(settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env.update(SECRAG_DATA_DIR=str(settings.data_dir), SECRAG_DATABASE_URL=url, SECRAG_ANONYMOUS_RATE_PER_MINUTE="0")
    try:
        with serving(env, log=data_dir / "serve.log") as (api, _):
            changes_latency(api, rounds)
            changes_storage(url)
    finally:
        embedded.stop(settings.pgdata)


def probe_hour(upstream: Path, work: Path) -> None:
    specs = default_registry()
    names = [n for n, s in specs.items() if s.tracking in ("release", "feed")]
    mirror = build_mirror(upstream, work / "probe-mirror", specs=specs, sources=names)
    server = LoopbackServer().start()
    try:
        api, feeds = serve_mirror(server, mirror)
        cfg = UpstreamConfig(policy=LoopbackPolicy(), limits=FAST_RETRIES, probe_timeout=20.0)
        cfg = cfg.with_mirror(mirror.repos, feeds, api)
        intervals = poll_intervals({n: specs[n] for n in names})
        say("\n(d) one hour of probes at the default intervals; one change mid-hour in cisa_kev, stratus_red_team")
        rows: list[list[object]] = []
        for name in sorted(names):
            server.answered.clear()
            count = 3600 // intervals[name]
            known: UpstreamVersion | None = None
            for i in range(count):
                if i == count // 2 and name in ("cisa_kev", "stratus_red_team"):
                    (new_kev_entry if name == "cisa_kev" else new_stratus_technique)(mirror, uuid.uuid4().hex[:8])
                seen = probe(specs[name], cfg, known=known)
                known = decode_cursor(name, encode_cursor(replace(seen)))  # what the sensor's cursor keeps
            statuses = [s for _, s in server.answered]
            not_modified = statuses.count(304)
            rows.append([name, intervals[name], count, not_modified, f"{not_modified / max(len(statuses), 1):.0%}"])
        print_table(["source", "interval", "probes", "304", "share"], rows)
    finally:
        server.close()
    commits = [n for n, s in specs.items() if s.tracking == "commit"]
    per_hour = sorted(3600 / s for n, s in poll_intervals(specs).items() if n in commits)
    say(f"  {len(commits)} commit sources: git ls-remote {per_hour[0]:.1f} to {per_hour[-1]:.1f} times an hour each,")
    say(f"  {sum(per_hour):.0f} an hour in all")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--kinds", default="commit,release,feed")
    ap.add_argument("--data-dir", type=Path, default=Path(".secrag/bench-fresh"))
    ap.add_argument("--poll-interval", type=int, help="SECRAG_POLL_INTERVAL (default: each source's own)")
    ap.add_argument("--timeout", type=float, default=7200.0, help="seconds to wait for convergence")
    ap.add_argument("--change-timeout", type=float, default=900.0, help="seconds to wait for one change")
    ap.add_argument("--latency-rounds", type=int, default=50)
    ap.add_argument("--probes-only", action="store_true", help="only (d): no topology")
    ap.add_argument("--feed-only", action="store_true", help="only (b) and (c), on the store a run left")
    ap.add_argument("--model-cache-dir", type=Path, help="SECRAG_MODEL_CACHE_DIR (existing ONNX exports)")
    args = ap.parse_args()
    upstream, data_dir = args.upstream.resolve(), args.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    if args.probes_only:
        probe_hour(upstream, data_dir)
        return 0
    if args.feed_only:
        feed_figures(data_dir, args.latency_rounds)
        return 0
    kinds = [k for k in args.kinds.split(",") if k]
    measured = sorted({LOOKUP_SOURCE, *(KINDS[k] for k in kinds)})
    snapshot = snapshot_of(upstream, measured, data_dir / "snapshot")
    env = run_env(data_dir, snapshot, args.model_cache_dir)
    if args.poll_interval:
        env["SECRAG_POLL_INTERVAL"] = str(args.poll_interval)
    settings = Settings(
        _env_file=None, data_dir=data_dir / "data", upstream_mirror=snapshot, poll_interval=args.poll_interval
    )
    specs = default_registry()
    intervals = poll_intervals(specs, settings.poll_interval)
    ports = {"dagster": free_port(), "api": free_port(), "code": free_port()}
    dagster, api = f"http://127.0.0.1:{ports['dagster']}", f"http://127.0.0.1:{ports['api']}"
    proc = start(env, data_dir, ports)
    say(f"secrag run on {data_dir} (sources {', '.join(measured)}; Dagster {dagster}, API {api}; log run.log)")
    try:
        wait_healthy(proc, dagster, api)
        url = wait_converged(proc, database.database_url(settings), dagster, measured, args.timeout)
        # The mirror `secrag run` built (and reuses): upstream moves on there.
        mirror = build_mirror(snapshot, settings.data_dir / "mirrors", specs=specs)
        results = [time_change(kind, mirror, url, api, dagster, args.change_timeout) for kind in kinds]
        report_stages(results, intervals)
        changes_latency(api, args.latency_rounds)
        changes_storage(url)
    finally:
        stop_group(proc, grace=60)
        embedded.stop(settings.pgdata)
    probe_hour(upstream, data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
