"""Time to searchable through the production topology, and what frequent probes and the change feed cost.

(a) `secrag run` on a fresh data directory whose upstream mirror holds the measured sources (sigma,
    stratus_red_team, cisa_kev, and mitre_attack for the lookup); once converged, per kind one new record is
    committed to the mirror as upstream would, and each stage is timed from the commit: noticed, run queued,
    started, published, embedded (Dagster's GraphQL), first full-text and vector hit (the API).
(b) GET /v1/changes latency and (c) bytes per change entry, on the store (a) left (--feed-only: only these).
(d) One hour of conditional probes of the release and feed sources at their default intervals against a
    loopback server of the mirror, one upstream change mid-hour: requests and 304s per source (--probes-only).
--push: a Sigma rule `git push`ed to the mirror's bare repository, whose post-receive hook (lib/post_receive.py)
    sends the signed GitHub webhook to `secrag hooks` (--pushes times), then the same without the hook (--polls
    times): seconds from the commit to noticed, full-text and vector hit, p50 and max; then a forged, an unsigned
    and a replayed delivery, which must record no poke.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for the tests' mirror helpers
from pipeline.polling import poll_intervals  # noqa: E402
from pipeline.probe_cursor import decode_cursor, encode_cursor  # noqa: E402
from pipeline.sources.interface import UpstreamVersion  # noqa: E402
from pipeline.sources.mirror import build_mirror  # noqa: E402
from pipeline.sources.probes import probe  # noqa: E402
from pipeline.sources.registry import default_registry  # noqa: E402
from pipeline.sources.upstream import UpstreamConfig  # noqa: E402
from secrag.db import database, embedded  # noqa: E402
from secrag.settings import Settings  # noqa: E402
from secrag_cli.processes import stop_group  # noqa: E402
from serving.hooks.signatures import sign  # noqa: E402
from tests.plugins.upstream import FAST_RETRIES, LoopbackPolicy, LoopbackServer, serve_mirror  # noqa: E402

from lib.git_server import GitServer  # noqa: E402
from lib.processes import SECRAG, free_port, get, graphql, serving  # noqa: E402
from lib.table import print_table  # noqa: E402
from lib.timing import percentile  # noqa: E402
from lib.topology import Topology, run_env, say, snapshot_of, wait_for  # noqa: E402
from lib.upstream_changes import new_kev_entry, new_sigma_rule, new_stratus_technique  # noqa: E402

KINDS = {"commit": "sigma", "release": "stratus_red_team", "feed": "cisa_kev"}
CHANGES = {"sigma": new_sigma_rule, "stratus_red_team": new_stratus_technique, "cisa_kev": new_kev_entry}
STAGES = ("noticed", "run_queued", "run_started", "published", "embedded", "fts_hit", "vector_hit")
HITS = ("noticed", "fts_hit", "vector_hit")
REPOSITORY = "SigmaHQ/sigma"  # sigma's webhook: SECRAG_HOOK_SECRETS's key and the receiver's path
SEEN = "SELECT last_seen_version, seen_since, current_version FROM sources WHERE name = %s"
MATERIALIZATION = """query($key: AssetKeyInput!) { assetOrError(assetKey: $key) { ... on Asset {
  assetMaterializations(limit: 1) { runId metadataEntries { label
    ... on TimestampMetadataEntry { timestamp } ... on TextMetadataEntry { text } } } } } }"""


def materialized(dagster: str, key: list[str]) -> dict[str, Any]:
    """The latest materialization's metadata."""
    found = graphql(dagster, MATERIALIZATION, {"key": {"path": key}})
    events = (found.get("assetOrError") or {}).get("assetMaterializations") or []
    return {e["label"]: e.get("timestamp", e.get("text")) for e in events[0]["metadataEntries"]} if events else {}


def watch(top: Topology, url: str, source: str, change: tuple[str, str, float], stages: tuple[str, ...],
          timeout: float) -> dict[str, float]:  # fmt: skip
    """Seconds from the commit (`change`: token, title, when) to each stage, every half second."""
    token, title, committed = change
    stamps: dict[str, float] = {}
    version = None
    while len(stamps) < len(stages) and time.time() - committed < timeout:
        with database.connect(url) as conn:
            row = conn.execute(SEEN, [source]).fetchone()
        if "noticed" not in stamps and row and row[0] and row[1] and row[1].timestamp() >= committed - 1:
            version, stamps["noticed"] = row[0], row[1].timestamp()
        if "published" in stages and "published" not in stamps and version and row and row[2] == version:
            meta = materialized(top.dagster, ["sources", source])
            if meta.get("version") == version:
                stamps.update({s: float(meta[f"{s}_at"]) for s in STAGES[1:4] if meta.get(f"{s}_at")})
        if "embedded" in stages and "published" in stamps and "embedded" not in stamps:
            at = materialized(top.dagster, ["embeddings", source]).get("embedded_at")
            if at and float(at) >= stamps["published"]:
                stamps["embedded"] = float(at)
        for mode in ("fts", "vector"):
            if f"{mode}_hit" not in stamps and top.hit(source, token, title, mode):
                stamps[f"{mode}_hit"] = time.time()
        time.sleep(0.5)
    return {stage: at - committed for stage, at in stamps.items()}


def changes_latency(api: str, rounds: int) -> None:
    say("\n(b) GET /v1/changes latency (ms), on the first build's history")
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 86400))
    cases = {"newest 100": {"limit": 100}, "newest 1000": {"limit": 1000},
             "sigma, 100": {"sources": "sigma", "limit": 100}, "since a day ago": {"since": since}}  # fmt: skip
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
    names = sorted(n for n, s in specs.items() if s.tracking in ("release", "feed"))
    mirror = build_mirror(upstream, work / "probe-mirror", specs=specs, sources=names)
    server = LoopbackServer().start()
    try:
        api, feeds = serve_mirror(server, mirror)
        cfg = UpstreamConfig(policy=LoopbackPolicy(), limits=FAST_RETRIES, probe_timeout=20.0)
        cfg = cfg.with_mirror(mirror.repos, feeds, api)
        intervals = poll_intervals({n: specs[n] for n in names})
        say("\n(d) one hour of probes at the default intervals; one change mid-hour in cisa_kev, stratus_red_team")
        rows: list[list[object]] = []
        for name in names:
            server.answered.clear()
            count = 3600 // intervals[name]
            known: UpstreamVersion | None = None
            for i in range(count):
                if i == count // 2 and name in ("cisa_kev", "stratus_red_team"):
                    CHANGES[name](mirror, uuid.uuid4().hex[:8])
                seen = probe(specs[name], cfg, known=known)
                known = decode_cursor(name, encode_cursor(replace(seen)))  # what the sensor's cursor keeps
            statuses = [s for _, s in server.answered]
            not_modified = statuses.count(304)
            rows.append([name, intervals[name], count, not_modified, f"{not_modified / max(len(statuses), 1):.0%}"])
        print_table(["source", "interval", "probes", "304", "share"], rows)
    finally:
        server.close()
    per_hour = sorted(3600 / i for n, i in poll_intervals(specs).items() if specs[n].tracking == "commit")
    say(f"  {len(per_hour)} commit sources: git ls-remote {per_hour[0]:.1f} to {per_hour[-1]:.1f} times an hour each,")
    say(f"  {sum(per_hour):.0f} an hour in all")


def deliver(hooks: str, secret: bytes, delivery: str, signature: str | None = None) -> int:
    """A push delivery straight to the receiver, signed with `secret` unless `signature` is given."""
    body = b'{"ref":"refs/heads/master"}'
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "push", "X-GitHub-Delivery": delivery}
    headers["X-Hub-Signature-256"] = sign(secret, body) if signature is None else signature
    request = urllib.request.Request(f"{hooks}/hooks/github/{REPOSITORY}", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def pushed(server: GitServer, top: Topology, url: str, hooked: bool, timeout: float) -> dict[str, float]:
    token = uuid.uuid4().hex[:8]
    committed = time.time()
    title, commit = new_sigma_rule(server.clone, token)
    said = server.push(commit)
    if hooked and "answered 202" not in said:  # the hook sends the webhook during the push
        raise SystemExit(f"the post-receive hook said: {said!r}")
    return watch(top, url, "sigma", (token, title, committed), HITS, timeout)


def push_report(name: str, runs: list[dict[str, float]]) -> None:
    say(f"\n{name}: seconds from the commit, {len(runs)} changes")
    for stage in HITS:
        values = [r[stage] for r in runs if stage in r]
        if len(values) < len(runs):
            say(f"  {stage:<11} {len(runs) - len(values)} of {len(runs)} never got there")
        if values:
            say(f"  {stage:<11} p50 {statistics.median(values):6.1f}  max {max(values):6.1f}")


def push_bench(args: argparse.Namespace, top: Topology, url: str, env: dict[str, str], snapshot: Path) -> None:
    """--push, once the topology converged: the receiver started, the hook installed, the pushes, the polls."""
    hooks_port = free_port()
    hooks = f"http://127.0.0.1:{hooks_port}"
    log = (args.data_dir / "hooks.log").open("ab")
    receiver = subprocess.Popen([*SECRAG, "hooks", "--port", str(hooks_port)], env=env, cwd=args.data_dir,
                                stdout=log, stderr=log, start_new_session=True)  # fmt: skip
    try:
        wait_for("the receiver", lambda: (get(f"{hooks}/healthz") == 200, "starting"), receiver, 120)
        mirror = build_mirror(snapshot, args.data_dir / "data" / "mirrors", specs=default_registry())
        server = GitServer(mirror, "sigma", REPOSITORY, args.data_dir / "clone")
        server.install_hook(hooks, args.data_dir / "sigma-webhook-secret")
        runs: dict[str, list[dict[str, float]]] = {"with the webhook": [], "the poll alone": []}
        for name, count in (("with the webhook", args.pushes), ("the poll alone", args.polls)):
            for i in range(count):
                runs[name].append(pushed(server, top, url, name == "with the webhook", args.change_timeout))
                say(f"  {name}, change {i + 1}: {runs[name][-1]}")
            server.remove_hook()
        secret = (args.data_dir / "sigma-webhook-secret").read_bytes()
        with database.connect(url) as conn:
            before = conn.execute("SELECT count(*) FROM pokes").fetchone()[0]
        first = str(uuid.uuid4())
        deliver(hooks, secret, first)
        refused = {"forged": deliver(hooks, b"not-the-secret", str(uuid.uuid4())),
                   "unsigned": deliver(hooks, secret, str(uuid.uuid4()), signature=""),
                   "replayed": deliver(hooks, secret, first)}  # fmt: skip
        with database.connect(url) as conn:
            after = conn.execute("SELECT count(*) FROM pokes").fetchone()[0]
        for name, values in runs.items():
            push_report(name, values)
        say(f"\nrefused deliveries: {refused}; pokes recorded by them: {after - before - 1} (one good delivery)")
        with urllib.request.urlopen(f"{hooks}/metrics", timeout=10) as response:
            lines = response.read().decode().splitlines()
        counts = {x.split('"')[1]: float(x.split()[1]) for x in lines if x.startswith("secrag_hook_deliveries_total{")}
        say(f"receiver /metrics: {counts}")
    finally:
        stop_group(receiver, grace=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--kinds", default="commit,release,feed")
    ap.add_argument("--data-dir", type=Path, help="default .secrag/bench-fresh, with --push .secrag/bench-push")
    ap.add_argument("--poll-interval", type=int, help="SECRAG_POLL_INTERVAL (default: each source's own)")
    ap.add_argument("--timeout", type=float, default=7200.0, help="seconds to wait for convergence")
    ap.add_argument("--change-timeout", type=float, default=900.0, help="seconds to wait for one change")
    ap.add_argument("--latency-rounds", type=int, default=50)
    ap.add_argument("--probes-only", action="store_true", help="only (d): no topology")
    ap.add_argument("--feed-only", action="store_true", help="only (b) and (c), on the store a run left")
    ap.add_argument("--model-cache-dir", type=Path, help="SECRAG_MODEL_CACHE_DIR (existing ONNX exports)")
    ap.add_argument("--push", action="store_true", help="push to searchable, with and without the webhook")
    ap.add_argument("--pushes", type=int, default=10, help="with --push: changes pushed with the hook")
    ap.add_argument("--polls", type=int, default=3, help="with --push: changes pushed without it")
    args = ap.parse_args()
    upstream = args.upstream.resolve()
    args.data_dir = (args.data_dir or Path(".secrag/bench-push" if args.push else ".secrag/bench-fresh")).resolve()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if args.probes_only:
        probe_hour(upstream, args.data_dir)
        return 0
    if args.feed_only:
        feed_figures(args.data_dir, args.latency_rounds)
        return 0
    kinds = [] if args.push else [k for k in args.kinds.split(",") if k]
    measured = sorted({"mitre_attack", *(["sigma"] if args.push else [KINDS[k] for k in kinds])})  # with the lookup's
    snapshot = snapshot_of(upstream, measured, args.data_dir / "snapshot")
    env = run_env(args.data_dir, snapshot, args.model_cache_dir)
    if args.poll_interval:
        env["SECRAG_POLL_INTERVAL"] = str(args.poll_interval)
    if args.push:
        secret = secrets.token_hex(32)
        (args.data_dir / "sigma-webhook-secret").write_text(secret)
        (args.data_dir / "sigma-webhook-secret").chmod(0o600)
        env.update(SECRAG_HOOKS_ENABLED="true", SECRAG_HOOK_SECRETS=json.dumps({REPOSITORY: secret}))
        env.update(SECRAG_SENTENCE_TRAINING="false")  # not what is measured: keeps the cores for the push path
    settings = Settings(_env_file=None, data_dir=args.data_dir / "data", upstream_mirror=snapshot,
                        poll_interval=args.poll_interval)  # fmt: skip
    intervals = poll_intervals(default_registry(), settings.poll_interval)
    top = Topology(env, args.data_dir)
    say(f"secrag run on {args.data_dir} (sources {', '.join(measured)}; Dagster {top.dagster}, API {top.api}; "
        f"log run.log); sigma polled every {intervals['sigma']} s")  # fmt: skip
    try:
        top.healthy()
        url = database.database_url(settings)
        top.converged(url, measured, args.timeout)
        if args.push:
            push_bench(args, top, url, env, snapshot)
            return 0
        # The mirror `secrag run` built (and reuses): upstream moves on there.
        mirror = build_mirror(snapshot, settings.data_dir / "mirrors", specs=default_registry())
        rows = []
        for kind in kinds:
            token, committed = uuid.uuid4().hex[:8], time.time()
            title, _ = CHANGES[KINDS[kind]](mirror, token)
            at = watch(top, url, KINDS[kind], (token, title, committed), STAGES, args.change_timeout)
            after_probe = at["vector_hit"] - at["noticed"] if {"vector_hit", "noticed"} <= at.keys() else None
            rows.append([kind, KINDS[kind], intervals[KINDS[kind]], *(at.get(s) for s in STAGES), after_probe])
        say("\n(a) time from the upstream commit to each stage, seconds")
        print_table(["kind", "source", "interval", *STAGES, "after probe"], rows)
        changes_latency(top.api, args.latency_rounds)
        changes_storage(url)
    finally:
        stop_group(top.proc, grace=60)
        embedded.stop(settings.pgdata)
    probe_hour(upstream, args.data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
