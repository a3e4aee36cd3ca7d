"""The work after the probe, per source: one upstream change of the source's kind, refreshed in process as the
`sources/<source>` and `embeddings/<source>` assets do.

On the store bench/build.py left (its embedded server started if stopped, or --database-url; its mirrors
rebuilt from --upstream), migrated first, for each upstream source (mitre_attack first): settle (refresh once,
expected `unchanged`, and embed what is pending), change its mirror once (bench/mirror_edits.py), then
refresh, rebuild the ATT&CK lookup where it applies, embed and activate, each phase timed. One row per source,
slowest first, then the slowest source's dominant phase. The sensor tick, run queue and process start are
bench/freshness.py's. The changes are undone at the end by rebuilding the mirrors and refreshing again
(`revert` rows) unless --keep-changes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for the tests' mirror helpers
from pipeline.activation import activate_model_if_complete  # noqa: E402
from pipeline.embedding import embed_pending  # noqa: E402
from pipeline.lookup_read import read_lookup  # noqa: E402
from pipeline.refresh import RefreshLimits, refresh_source  # noqa: E402
from pipeline.refresh_inputs import ATTACK_SOURCE, LOOKUP_SOURCES  # noqa: E402
from pipeline.resources import EmbedderResource, StoreResource, UpstreamResource  # noqa: E402
from pipeline.sources.interface import Upstream  # noqa: E402
from pipeline.sources.mirror import Mirror, build_mirror  # noqa: E402
from pipeline.sources.registry import SourceSpec, default_registry  # noqa: E402
from pipeline.sources.upstream import UpstreamConfig  # noqa: E402
from secrag.db import embedded, migrations  # noqa: E402
from secrag.db.queries import Queries  # noqa: E402
from secrag.errors import SecragError  # noqa: E402
from secrag.models.embedder import TextModel  # noqa: E402
from secrag.models.encoders import document_encoder  # noqa: E402
from secrag.settings import Settings, get_settings  # noqa: E402

from lib.store import bench_store_url  # noqa: E402
from lib.table import print_table  # noqa: E402
from mirror_edits import change_upstream, planned_change  # noqa: E402

PHASES = {  # what each phase does on a refresh of one changed record
    "fetch": "checks out the whole new version",
    "parse": "parses every file of the version",
    "publish": "diffs every record against the served ones and writes the changes in one transaction",
    "lookup": "reads the ATT&CK bundle again for the technique table (lookups/mitre_techniques)",
    "embed": "encodes the chunks without a vector and refreshes the counts",
    "other": "reads the technique names, fingerprints the inputs, builds the enrichment table",
}
FAILURES = (SecragError, LookupError)  # a refresh that failed (recorded as such), or no record to touch


def say(text: str) -> None:
    print(text, flush=True)


@dataclass
class Bench:
    """What every refresh uses: the store, the upstream (the mirror), the encoder."""

    conn: psycopg.Connection
    store: StoreResource
    upstream: Upstream
    encoder: TextModel
    write_batch: int = 0  # chunks per committed COPY of vectors (EmbedderResource.write_batch)

    def limits(self) -> RefreshLimits:
        s = self.store  # as the asset builds them
        return RefreshLimits(s.chunking(), s.shrink_limit(), s.error_share_limit(), s.work_path(), s.history_days())


@dataclass
class Row:
    """One timed refresh of one source."""

    source: str
    kind: str
    step: str  # settle | change | revert
    status: str
    version: str
    change: str = ""
    added: int = 0
    modified: int = 0
    removed: int = 0
    records: int = 0
    chunks_written: int = 0
    embedded: int = 0
    probe: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        """Seconds after the probe: every phase but the probe."""
        return sum(self.seconds.values())

    def dominant(self) -> tuple[str, float]:
        return max(self.seconds.items(), key=lambda kv: kv[1])


def rebuild_lookup(bench: Bench) -> int:
    """What `lookups/mitre_techniques` does after an ATT&CK publish: every domain's served techniques."""
    q = Queries(bench.store.sql_path(), "pipeline")
    specs = [default_registry()[name] for name in sorted(LOOKUP_SOURCES)]
    read = read_lookup(specs, bench.upstream, bench.conn, q, bench.store.work_path())
    if ATTACK_SOURCE not in read.versions:
        raise LookupError("sources/mitre_attack has no published version")
    return bench.store.store().replace_techniques(bench.conn, read.techniques, read.by_domain)


def refresh_once(bench: Bench, spec: SourceSpec, step: str) -> Row:
    """Refresh, lookup (ATT&CK), embed and activate, as the assets call them; each phase timed."""
    queries = Queries(bench.store.sql_path(), "pipeline")
    done = refresh_source(spec, bench.upstream, bench.conn, bench.store.store(), queries, bench.limits())
    seconds = {phase: done.seconds.get(phase, 0.0) for phase in ("fetch", "parse", "publish")}
    probe = done.seconds.get("probe", 0.0)
    seconds["other"] = max(done.elapsed - probe - sum(seconds.values()), 0.0)
    if done.status == "published" and spec.name in LOOKUP_SOURCES:
        mark = time.monotonic()
        rebuild_lookup(bench)
        seconds["lookup"] = time.monotonic() - mark
    mark = time.monotonic()
    stats = embed_pending(
        bench.conn, bench.encoder, bench.store.sql_path(), source=spec.name, batch_size=bench.write_batch
    )
    activate_model_if_complete(bench.conn, bench.store.sql_path(), bench.encoder.model_id)
    seconds["embed"] = time.monotonic() - mark
    row = Row(spec.name, spec.tracking, step, done.status, done.version, records=done.records, probe=probe)
    row.seconds, row.embedded = seconds, stats.embedded
    if done.result is not None:
        r = done.result
        row.added, row.modified, row.removed, row.chunks_written = r.inserted, r.modified, r.deleted, r.chunks_written
    return row


def failed(spec: SourceSpec, step: str, exc: Exception) -> Row:
    say(f"  {spec.name}: {step} failed: {exc}")
    return Row(spec.name, spec.tracking, step, "failed", "", change=str(exc)[:200])


def measure(bench: Bench, mirror: Mirror, spec: SourceSpec) -> tuple[Row, Row]:
    """Settle the source, change its upstream once, refresh it: (the settling refresh, the measured one).
    A failure is a row, not the end of the bench."""
    try:
        settle = refresh_once(bench, spec, "settle")
    except FAILURES as exc:
        return failed(spec, "settle", exc), failed(spec, "change", exc)
    try:
        change = change_upstream(bench.conn, mirror, spec.name)
        row = refresh_once(bench, spec, "change")
    except FAILURES as exc:
        return settle, failed(spec, "change", exc)
    row.change = change
    return settle, row


def report(rows: list[Row], title: str) -> None:
    say(f"\n{title}: seconds after the probe, slowest first")
    table = [
        [r.source, r.kind, r.status, *(r.seconds.get(p) for p in PHASES), r.total, r.probe]
        + [f"+{r.added} ~{r.modified} -{r.removed}", r.embedded, r.records]
        for r in sorted(rows, key=lambda r: r.total, reverse=True)
    ]
    print_table(["source", "kind", "status", *PHASES, "total", "probe", "+add ~mod -rem", "embedded", "records"], table)


def verdict(rows: list[Row], budget: float, load: float) -> None:
    if not rows:
        return
    slow = max(rows, key=lambda r: r.total)
    phase, seconds = slow.dominant()
    share = seconds / slow.total if slow.total else 0.0
    over = [r.source for r in rows if r.total > budget]
    say(
        f"\nslowest: {slow.source} ({slow.kind}), {slow.total:.1f} s after the probe; dominant phase {phase} "
        f"{seconds:.1f} s ({share:.0%}) of {slow.records} records ({slow.chunks_written} chunks written, "
        f"{slow.embedded} embedded; {slow.change}): the {phase} {PHASES[phase]}"
    )
    say(
        f"over {budget:.0f} s: {', '.join(over) if over else 'none'} (in production each embedding run's process "
        f"also loads the encoder, {load:.1f} s here)"
    )


def selected(names: str) -> list[SourceSpec]:
    specs = default_registry()
    wanted = [n for n in names.split(",") if n] or [n for n, s in specs.items() if s.tracking != "bundled"]
    unknown = [n for n in wanted if n not in specs or specs[n].tracking == "bundled"]
    if unknown:
        raise SystemExit(f"not an upstream source of the registry: {', '.join(unknown)}")
    return [specs[n] for n in sorted(wanted, key=lambda n: (n != ATTACK_SOURCE, n))]  # the lookup's source first


def mirror_of(upstream: Path, data_dir: Path, names: list[str]) -> Mirror:
    """The bench store's mirror (bench/build.py's layout), rebuilt from the snapshot where it moved on."""
    return build_mirror(upstream, (data_dir / "mirrors").resolve(), specs=default_registry(), sources=names)


def upstream_of(mirror: Mirror) -> Upstream:
    cfg = UpstreamConfig(probe_timeout=30, fetch_timeout=900).with_mirror(mirror.repos, mirror.feeds, mirror.api_base)
    return UpstreamResource.for_config(cfg).upstream()


def active_model(conn: psycopg.Connection) -> str:
    row = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()
    if row is None:
        raise SystemExit("the store has no active embedding model: build it first (bench/build.py)")
    return str(row[0])


def run(bench: Bench, mirror: Mirror, specs: list[SourceSpec], revert: Callable[[], object] | None) -> list[Row]:
    rows: list[Row] = []
    for spec in specs:
        settle, row = measure(bench, mirror, spec)
        rows += [settle, row]
        say(
            f"  {spec.name}: settle {settle.status} ({settle.total + settle.probe:.1f} s), then {row.change}: "
            f"{row.status} in {row.total:.1f} s after the probe"
        )
    if revert is not None:
        revert()
        for spec in specs:
            try:
                row = refresh_once(bench, spec, "revert")
            except FAILURES as exc:
                rows.append(failed(spec, "revert", exc))
                continue
            rows.append(row)
            say(f"  {spec.name}: back to the snapshot, {row.status} in {row.total:.1f} s after the probe")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, help="the snapshot the store's mirrors were built from")
    ap.add_argument("--data-dir", type=Path, default=Path(".secrag/bench"), help="bench/build.py's data directory")
    ap.add_argument("--database-url", help="the store (default: the bench store in --data-dir)")
    ap.add_argument("--sources", default="", help="comma-separated source names (default: every upstream source)")
    ap.add_argument("--model-cache-dir", type=Path, help="ONNX exports (default: SECRAG_MODEL_CACHE_DIR or .secrag)")
    ap.add_argument("--keep-changes", action="store_true", help="leave the changed versions served")
    ap.add_argument("--budget", type=float, default=30.0, help="seconds after the probe a source may take")
    ap.add_argument("--list", action="store_true", help="print the sources and their changes, touch nothing")
    ap.add_argument("--json", action="store_true", help="also print every row as JSON")
    args = ap.parse_args()
    specs = selected(args.sources)
    if args.list:
        for spec in specs:
            say(f"{spec.name:<24} {spec.tracking:<8} {spec.parser:<22} {planned_change(spec)}")
        return 0
    if args.upstream is None:
        ap.error("--upstream is required (the snapshot bench/build.py built the mirrors from)")
    data_dir = args.data_dir.resolve()
    settings = Settings(data_dir=data_dir, database_url=args.database_url)
    was_running = bool(args.database_url) or embedded.status(settings.pgdata).running
    url = args.database_url or bench_store_url(data_dir)
    names = [s.name for s in specs]
    mirror = mirror_of(args.upstream.resolve(), data_dir, names)
    upstream = upstream_of(mirror)
    store = StoreResource(database_url=url, work_dir=str(data_dir / "work"))
    try:
        with store.connect() as conn:
            applied = migrations.migrate(conn, store.sql_path())  # as `secrag run` and bench/build.py do
            if applied:
                say(f"applied migrations {', '.join(f'{m.version:04d}_{m.name}' for m in applied)}")
            model = active_model(conn)
            cache = args.model_cache_dir or get_settings().models_dir
            s = get_settings()
            encoder = document_encoder(
                model, batch_size=s.embedding_batch_size, threads=s.embedding_threads, cache_dir=cache
            )
            mark = time.monotonic()
            encoder.load()
            load = time.monotonic() - mark
            say(f"{model} loaded from {cache} in {load:.1f} s (each embedding run's process pays this)")
            bench = Bench(conn, store, upstream, encoder, EmbedderResource().write_batch)
            revert = None if args.keep_changes else (lambda: mirror_of(args.upstream.resolve(), data_dir, names))
            rows = run(bench, mirror, specs, revert)
    finally:
        if not was_running:
            embedded.stop(settings.pgdata)
    changed = [r for r in rows if r.step == "change"]
    report(changed, "one upstream change per source")
    if not args.keep_changes:
        report([r for r in rows if r.step == "revert"], "the change undone (the snapshot again)")
    report([r for r in rows if r.step == "settle"], "settle, before each change (nothing new expected)")
    verdict(changed, args.budget, load)
    if args.json:
        say(json.dumps([{**asdict(r), "total": round(r.total, 3)} for r in rows], indent=2))
    return 0 if all(r.status == "published" for r in changed) else 1


if __name__ == "__main__":
    sys.exit(main())
