"""Full build of every source through the Dagster asset graph into a fresh store, with figures.

    python bench/build.py --upstream ../shared/upstream [--only mitre_car,hijacklibs]
        [--data-dir .secrag/bench] [--standalone-sample 3000] [--into-existing] [--json]
    python bench/build.py --upstream ../shared/upstream --parse-only [--only hunting_notes]

Serves the snapshot as local git mirrors, creates a fresh database `secrag_bench` on the embedded
server (or DATABASE_URL's server), materializes the whole graph in process, then embeds a sample
of the same chunks with the same model outside the pipeline to compare. Leaves the database and
mirrors in place (the bench store the other benches take). --parse-only parses each source's snapshot
folder with its parser, no database: records, the share with ATT&CK techniques, skipped files, seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import dagster as dg
from psycopg import sql

warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)

from pipeline.definitions import build_definitions  # noqa: E402
from pipeline.embedding import PHASES as EMBED_PHASES  # noqa: E402
from pipeline.indexing import embedding_input  # noqa: E402
from pipeline.resources import EmbedderResource, StoreResource, UpstreamResource  # noqa: E402
from pipeline.sources.mirror import Mirror, build_mirror  # noqa: E402
from pipeline.sources.mirror_plan import snapshot_folder  # noqa: E402
from pipeline.sources.registry import SourceSpec, default_registry  # noqa: E402
from pipeline.sources.upstream import UpstreamConfig  # noqa: E402
from secrag.db import database, migrations  # noqa: E402
from secrag.settings import Settings  # noqa: E402

from lib.store import BENCH_DB  # noqa: E402
from lib.table import print_table  # noqa: E402

PHASES = ("probe", "fetch", "parse", "publish")


def select_specs(only: str) -> dict[str, SourceSpec]:
    names = {s for s in only.split(",") if s}
    specs = default_registry()
    return {n: s for n, s in specs.items() if not names or n in names}


def mirror_for(upstream: Path, data_dir: Path, specs: dict[str, SourceSpec]) -> Mirror:
    names = sorted(n for n in specs if snapshot_folder(n, default_registry(), upstream))
    return build_mirror(upstream, (data_dir / "mirrors").resolve(), specs=default_registry(), sources=names)


def bench_database(settings: Settings, *, fresh: bool) -> str:
    """The migrated bench store, made again from nothing when `fresh`."""
    server = database.server_url(settings, create=True)
    if fresh:
        with database.connect(database.with_database(server, "postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DB)))
    url = database.with_database(server, BENCH_DB)
    with database.connect(url, autocommit=True) as conn:
        migrations.migrate(conn, settings.sql_dir)
    return url


def bench_definitions(settings: Settings, url: str, mirror: Mirror, specs: dict[str, SourceSpec]) -> dg.Definitions:
    cfg = UpstreamConfig(probe_timeout=30, fetch_timeout=900).with_mirror(mirror.repos, mirror.feeds, mirror.api_base)
    resources = {
        "store": StoreResource(database_url=url, work_dir=str((settings.data_dir / "work").resolve())),
        "upstream": UpstreamResource.for_config(cfg),
        "embedder": EmbedderResource(
            model=settings.embedding_model,
            batch_size=settings.embedding_batch_size,
            threads=settings.embedding_threads,
        ),
    }
    present = {n: s for n, s in specs.items() if n in mirror.repos}
    return build_definitions(settings, present, [], resources=resources)


def run_graph(
    defs: dg.Definitions,
    selection: str | dg.AssetSelection | None = None,
) -> tuple[dg.ExecuteInProcessResult, float]:
    job = defs.resolve_implicit_global_asset_job_def()
    if selection is not None:
        chosen = dg.AssetSelection.from_string(selection) if isinstance(selection, str) else selection
        job = job.get_subset(asset_selection=chosen.resolve(defs.resolve_asset_graph()))
    started = time.monotonic()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False, run_config=quiet)
    return result, time.monotonic() - started


def materializations(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    out = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        out[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    return out


def failures(result: dg.ExecuteInProcessResult) -> list[str]:
    return [
        f"{e.step_key}: {e.event_specific_data.error.message.strip()[:200]}"
        for e in result.all_events
        if e.event_type_value == "STEP_FAILURE"
    ]


def phase_seconds(mats: dict[str, dict[str, Any]]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for key, meta in mats.items():
        if key.startswith("sources/"):
            for phase in PHASES:
                totals[phase] += float(meta.get(f"seconds_{phase}", 0.0))
        elif key.startswith("embeddings/"):
            totals["embed"] += float(meta.get("seconds", 0.0))
            for phase in EMBED_PHASES:
                totals[f"embed_{phase}"] += float(meta.get(f"embed_seconds_{phase}", 0.0))
    return {k: round(v, 1) for k, v in totals.items()}


def standalone_embedding(url: str, settings: Settings, sample: int) -> dict[str, float]:
    """Encode (a sample of) the distinct chunk texts with the same model, outside the pipeline."""
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT ON (content_hash) title, enriched_text FROM chunks ORDER BY content_hash"
        ).fetchall()
    texts = [embedding_input(t, e) for t, e in rows]
    chosen = random.Random(7).sample(texts, sample) if 0 < sample < len(texts) else texts
    embedder = EmbedderResource(
        model=settings.embedding_model,
        batch_size=settings.embedding_batch_size,
        threads=settings.embedding_threads,
    ).embedder()
    embedder.load()
    started = time.monotonic()
    for start in range(0, len(chosen), 256):
        embedder.encode_documents(chosen[start : start + 256])
    seconds = time.monotonic() - started
    rate = len(chosen) / seconds if seconds else 0.0
    return {
        "distinct_chunks": len(texts),
        "sampled": len(chosen),
        "seconds": round(seconds, 1),
        "chunks_per_second": round(rate, 1),
        "all_chunks_seconds": round(len(texts) / rate, 1) if rate else 0.0,
    }


def store_totals(url: str) -> dict[str, int]:
    with database.connect(url, autocommit=True) as conn:
        docs, chunks, vectors = conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks), (SELECT count(*) FROM embeddings)"
        ).fetchone()
    return {"documents": docs, "chunks": chunks, "vectors": vectors}


def parse_only(upstream: Path, specs: dict[str, SourceSpec]) -> int:
    """Each source parsed from its snapshot folder: one table row, or its ParseError."""
    from pipeline.sources.parsing import parse_source
    from secrag.errors import ParseError

    rows: list[list[object]] = []
    for name, spec in sorted(specs.items()):
        started = time.monotonic()
        try:
            outcome = parse_source(spec, upstream / name)
        except ParseError as exc:
            print(f"{name}: {exc}")
            continue
        seconds = round(time.monotonic() - started, 2)
        rows.append([name, len(outcome.records), outcome.with_techniques, len(outcome.skipped), seconds])
    print_table(["source", "records", "with techniques", "skipped files", "seconds"], rows)
    print(f"peak RSS {peak_rss_mib()['process']} MiB")
    return 0 if len(rows) == len(specs) else 1


def peak_rss_mib() -> dict[str, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"process": round(own, 1), "largest_child": round(children, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True, help="snapshot folder, one sub-folder per source")
    ap.add_argument("--data-dir", type=Path, default=Path(".secrag/bench"), help="mirrors and work folders")
    ap.add_argument("--only", default="", help="comma-separated source names (default: all)")
    ap.add_argument("--standalone-sample", type=int, default=3000, help="chunks embedded outside the pipeline")
    ap.add_argument("--into-existing", action="store_true", help="add to the existing secrag_bench, not a fresh one")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--parse-only", action="store_true", help="only parse each source's snapshot folder")
    args = ap.parse_args()
    settings = Settings(data_dir=args.data_dir)
    specs = select_specs(args.only)
    if args.parse_only:
        return parse_only(args.upstream, specs)
    t0 = time.monotonic()
    mirror = mirror_for(args.upstream.resolve(), args.data_dir, specs)
    mirror_seconds = time.monotonic() - t0
    url = bench_database(settings, fresh=not args.into_existing)
    defs = bench_definitions(settings, url, mirror, specs)
    result, seconds = run_graph(defs)
    mats = materializations(result)
    phases = phase_seconds(mats)
    totals = store_totals(url)
    pure = standalone_embedding(url, settings, args.standalone_sample)
    report = {
        "sources": len([k for k in mats if k.startswith("sources/")]),
        **totals,
        "mirror_seconds": round(mirror_seconds, 1),
        "graph_seconds": round(seconds, 1),
        "phases": phases,  # embed_write runs beside embed_encode; embed_wait is what the encoder waited for it
        "pipeline_embedding_chunks_per_second": round(
            sum(m.get("embedded", 0) for k, m in mats.items() if k.startswith("embeddings/"))
            / max(phases.get("embed", 0.0), 1e-9),
            1,
        ),
        "standalone_embedding": pure,
        "ratio_total_to_pure_embedding": round(seconds / pure["all_chunks_seconds"], 2)
        if pure["all_chunks_seconds"]
        else None,
        "peak_rss_mib": peak_rss_mib(),
        "failures": failures(result),
        "per_source": {
            k.split("/", 1)[1]: {
                "records": m.get("records"),
                "chunks_written": m.get("chunks_written"),
                "seconds": m.get("seconds"),
            }
            for k, m in sorted(mats.items())
            if k.startswith("sources/")
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        per_source = report.pop("per_source")
        for key, value in report.items():
            print(f"{key}: {value}")
        rows = [[name, r["records"], r["chunks_written"], r["seconds"]] for name, r in per_source.items()]
        print_table(["source", "records", "chunks written", "seconds"], rows)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
