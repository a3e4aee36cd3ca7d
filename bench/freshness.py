"""Time to searchable through the production topology (`secrag run` on a fresh data directory), and the change feed.

(a) Once the measured sources (sigma, stratus_red_team, cisa_kev and mitre_attack, the lookup's) converged, per
    kind one new record is committed to the mirror, and each stage is timed from the commit: noticed, run queued,
    started, published, embedded (Dagster's GraphQL), first full-text and vector hit (the API).
(b) GET /v1/changes latency and (c) bytes per change entry, on the store (a) left (--feed-only: only these).
--push: a Sigma rule `git push`ed to the mirror, whose post-receive hook (lib/post_receive.py) sends the signed
    webhook to `secrag hooks` (--pushes times), then without the hook (--polls): seconds to noticed and to hits.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import time
import urllib.parse
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests/plugins/mirror_changes.py
from pipeline.polling import poll_intervals  # noqa: E402
from pipeline.sources.mirror import build_mirror  # noqa: E402
from pipeline.sources.registry import default_registry  # noqa: E402
from secrag.db import database, embedded  # noqa: E402
from secrag.settings import Settings  # noqa: E402
from secrag_cli.processes import stop_group  # noqa: E402

from lib.processes import request, serving  # noqa: E402
from lib.table import print_table  # noqa: E402
from lib.timing import percentile  # noqa: E402
from lib.topology import Topology, run_env, snapshot_of  # noqa: E402
from lib.upstream import GitServer, new_kev_entry, new_sigma_rule, new_stratus_technique  # noqa: E402

KINDS = {"commit": "sigma", "release": "stratus_red_team", "feed": "cisa_kev"}
CHANGES = {"sigma": new_sigma_rule, "stratus_red_team": new_stratus_technique, "cisa_kev": new_kev_entry}
STAGES = ("noticed", "run_queued", "run_started", "published", "embedded", "fts_hit", "vector_hit")
HITS = ("noticed", "fts_hit", "vector_hit")
TIMEOUT, CHANGE_TIMEOUT, ROUNDS = 7200.0, 900.0, 50  # seconds to convergence, to one change; GET /v1/changes
REPOSITORY = "SigmaHQ/sigma"  # sigma's webhook: SECRAG_HOOK_SECRETS's key and the receiver's path
SEEN = "SELECT last_seen_version, seen_since, current_version FROM sources WHERE name = %s"
MATERIALIZATION = """query($key: AssetKeyInput!) { assetOrError(assetKey: $key) { ... on Asset {
  assetMaterializations(limit: 1) { runId metadataEntries { label
    ... on TimestampMetadataEntry { timestamp } ... on TextMetadataEntry { text } } } } } }"""


def materialized(top: Topology, key: list[str]) -> dict[str, Any]:
    """The latest materialization's metadata."""
    found = top.graphql(MATERIALIZATION, {"key": {"path": key}})
    events = (found.get("assetOrError") or {}).get("assetMaterializations") or []
    return {e["label"]: e.get("timestamp", e.get("text")) for e in events[0]["metadataEntries"]} if events else {}


def changes(api: str, url: str) -> None:
    """(b) and (c): the feed's latency and the bytes of its history."""
    print("\n(b) GET /v1/changes latency (ms), on the first build's history")
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 86400))
    cases = {"newest 100": {"limit": 100}, "newest 1000": {"limit": 1000},
             "sigma, 100": {"sources": "sigma", "limit": 100}, "since a day ago": {"since": since}}  # fmt: skip
    rows: list[list[object]] = []
    for name, params in cases.items():
        timings, answered = [], 0
        for _ in range(ROUNDS):
            started = time.perf_counter()
            answered += request(f"{api}/v1/changes?{urllib.parse.urlencode(params)}")[0] == 200
            timings.append((time.perf_counter() - started) * 1000)
        rows.append([name, percentile(timings, 50), percentile(timings, 95), answered])
    print_table(["request", "p50", "p95", "answered 200"], rows)
    with database.connect(url) as conn:
        size, n = conn.execute(
            "SELECT pg_total_relation_size('document_changes'), count(*) FROM document_changes"
        ).fetchone()
    print(f"\n(c) change history: {n} entries, {size / 1e6:.1f} MB with indexes, {size / max(n, 1):.0f} B an entry")


def feed_figures(data_dir: Path) -> None:
    """(b) and (c) on the store a run of this bench left, served by `secrag serve` alone."""
    settings = Settings(_env_file=None, data_dir=data_dir / "data")
    url = database.database_url(settings)
    env = {**run_env(data_dir, data_dir / "snapshot", None), "SECRAG_DATABASE_URL": url}
    try:
        with serving(env, log=data_dir / "serve.log") as (api, _):
            changes(api, url)
    finally:
        embedded.stop(settings.pgdata)


def timed(top: Topology, url: str, source: str, commit: Callable[[str], str], stages: tuple[str, ...],
          timeout: float) -> dict[str, float]:  # fmt: skip
    """Seconds from one new record, committed by `commit(token)` (which answers its title), to each stage."""
    token, committed = uuid.uuid4().hex[:8], time.time()
    title = commit(token)
    stamps: dict[str, float] = {}
    version = None
    while len(stamps) < len(stages) and time.time() - committed < timeout:
        with database.connect(url) as conn:
            row = conn.execute(SEEN, [source]).fetchone()
        if "noticed" not in stamps and row and row[0] and row[1] and row[1].timestamp() >= committed - 1:
            version, stamps["noticed"] = row[0], row[1].timestamp()
        if "published" in stages and "published" not in stamps and version and row and row[2] == version:
            meta = materialized(top, ["sources", source])
            if meta.get("version") == version:
                stamps.update({s: float(meta[f"{s}_at"]) for s in STAGES[1:4] if meta.get(f"{s}_at")})
        if "embedded" in stages and "published" in stamps and "embedded" not in stamps:
            at = materialized(top, ["embeddings", source]).get("embedded_at")
            if at and float(at) >= stamps["published"]:
                stamps["embedded"] = float(at)
        for mode in ("fts", "vector"):
            if f"{mode}_hit" not in stamps and top.hit(source, token, title, mode):
                stamps[f"{mode}_hit"] = time.time()
        time.sleep(0.5)
    return {stage: at - committed for stage, at in stamps.items()}


def push_rule(server: GitServer, token: str) -> str:
    """A new Sigma rule committed in the clone and pushed to the server, whose hook (if installed) sends the
    webhook during the push."""
    title, commit = new_sigma_rule(server.clone, token)
    said = server.push(commit)
    if server.hook.exists() and "answered 202" not in said:
        raise SystemExit(f"the post-receive hook said: {said!r}")
    return title


def push_bench(args: argparse.Namespace, top: Topology, url: str, env: dict[str, str], snapshot: Path) -> None:
    """--push, once the topology converged: the receiver started, the hook installed, the pushes, the polls."""
    with serving(env, command="hooks", ready="/healthz", log=args.data_dir / "hooks.log") as (hooks, _):
        mirror = build_mirror(snapshot, args.data_dir / "data" / "mirrors", specs=default_registry())
        server = GitServer(mirror, "sigma", REPOSITORY, args.data_dir / "clone")
        server.install_hook(hooks, args.data_dir / "sigma-webhook-secret")
        for name, count in (("with the webhook", args.pushes), ("the poll alone", args.polls)):
            runs = [timed(top, url, "sigma", lambda t: push_rule(server, t), HITS, CHANGE_TIMEOUT)
                    for _ in range(count)]  # fmt: skip
            server.remove_hook()
            print(f"\n{name}: seconds from the commit, {len(runs)} changes")
            for stage in HITS:
                values = [r[stage] for r in runs if stage in r]
                if len(values) < len(runs):
                    print(f"  {stage:<11} {len(runs) - len(values)} of {len(runs)} never got there")
                if values:
                    print(f"  {stage:<11} p50 {statistics.median(values):6.1f}  max {max(values):6.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--kinds", default="commit,release,feed")
    ap.add_argument("--feed-only", action="store_true", help="only (b) and (c), on the store a run left")
    ap.add_argument("--model-cache-dir", type=Path, help="SECRAG_MODEL_CACHE_DIR (existing ONNX exports)")
    ap.add_argument("--push", action="store_true", help="push to searchable, with and without the webhook")
    ap.add_argument("--pushes", type=int, default=10, help="with --push: changes pushed with the hook")
    ap.add_argument("--polls", type=int, default=3, help="with --push: changes pushed without it")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]  # progress as it happens, into a log too
    args.data_dir = Path(".secrag/bench-push" if args.push else ".secrag/bench-fresh").resolve()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if args.feed_only:
        feed_figures(args.data_dir)
        return 0
    kinds = [] if args.push else [k for k in args.kinds.split(",") if k]
    measured = sorted({"mitre_attack", *(["sigma"] if args.push else [KINDS[k] for k in kinds])})  # with the lookup's
    snapshot = snapshot_of(args.upstream.resolve(), measured, args.data_dir / "snapshot")
    env = run_env(args.data_dir, snapshot, args.model_cache_dir)
    if args.push:
        secret = secrets.token_hex(32)
        (args.data_dir / "sigma-webhook-secret").write_text(secret)
        env.update(SECRAG_HOOKS_ENABLED="true", SECRAG_HOOK_SECRETS=json.dumps({REPOSITORY: secret}))
        env.update(SECRAG_SENTENCE_TRAINING="false")  # not what is measured: keeps the cores for the push path
    settings = Settings(_env_file=None, data_dir=args.data_dir / "data", upstream_mirror=snapshot)
    intervals = poll_intervals(default_registry())
    top = Topology(env, args.data_dir)
    print(f"secrag run on {args.data_dir} (sources {', '.join(measured)}; Dagster {top.dagster}, API {top.api}; "
          f"log run.log); sigma polled every {intervals['sigma']} s")  # fmt: skip
    try:
        url = database.database_url(settings)
        top.converged(url, measured, TIMEOUT)
        if args.push:
            push_bench(args, top, url, env, snapshot)
            return 0
        mirror = build_mirror(snapshot, settings.data_dir / "mirrors", specs=default_registry())  # secrag run's
        rows = []
        for kind in kinds:
            change = CHANGES[KINDS[kind]]
            at = timed(top, url, KINDS[kind], lambda t: change(mirror, t)[0], STAGES, CHANGE_TIMEOUT)  # noqa: B023
            after_probe = at["vector_hit"] - at["noticed"] if {"vector_hit", "noticed"} <= at.keys() else None
            rows.append([kind, KINDS[kind], intervals[KINDS[kind]], *(at.get(s) for s in STAGES), after_probe])
        print("\n(a) time from the upstream commit to each stage, seconds")
        print_table(["kind", "source", "interval", *STAGES, "after probe"], rows)
        changes(top.api, url)
    finally:
        stop_group(top.proc, grace=60)
        embedded.stop(settings.pgdata)
    return 0


if __name__ == "__main__":
    sys.exit(main())
