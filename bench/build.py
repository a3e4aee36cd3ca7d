"""Full build of every source through the Dagster asset graph into a fresh store, with figures.

Serves the snapshot as local git mirrors, makes the database `secrag_bench` again on the embedded server of
--data-dir, materializes the whole graph in process, then embeds a sample of the chunks outside the pipeline to
compare; leaves both in place (the bench store). --parse-only parses each source's snapshot folder, no database.
"""

from __future__ import annotations

import argparse
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
from pipeline.sources.mirror import build_mirror  # noqa: E402
from pipeline.sources.mirror_plan import snapshot_folder  # noqa: E402
from pipeline.sources.registry import SourceSpec, default_registry  # noqa: E402
from pipeline.sources.upstream import UpstreamConfig  # noqa: E402
from secrag.db import database, migrations  # noqa: E402
from secrag.settings import Settings  # noqa: E402

from lib.store import BENCH_DB  # noqa: E402
from lib.table import print_table  # noqa: E402


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
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")
    return 0 if len(rows) == len(specs) else 1


def fresh_store(settings: Settings) -> str:
    """The bench store, dropped, created and migrated."""
    server = database.server_url(settings, create=True)
    with database.connect(database.with_database(server, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DB)))
    url = database.with_database(server, BENCH_DB)
    with database.connect(url, autocommit=True) as conn:
        migrations.migrate(conn, settings.sql_dir)
    return url


def standalone_embedding(url: str, embedder: EmbedderResource, sample: int) -> dict[str, float]:
    """Encode (a sample of) the distinct chunk texts with the same model, outside the pipeline."""
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT DISTINCT ON (content_hash) title, enriched_text FROM chunks ORDER BY content_hash")
        texts = [embedding_input(t, e) for t, e in rows]
    chosen = random.Random(7).sample(texts, sample) if 0 < sample < len(texts) else texts
    model = embedder.embedder()
    model.load()
    started = time.monotonic()
    for start in range(0, len(chosen), 256):  # as the pipeline reads them
        model.encode_documents(chosen[start : start + 256])
    seconds = time.monotonic() - started
    rate = len(chosen) / seconds if seconds else 0.0
    every = round(len(texts) / rate, 1) if rate else 0.0
    return {"distinct_chunks": len(texts), "sampled": len(chosen), "seconds": round(seconds, 1),
            "chunks_per_second": round(rate, 1), "all_chunks_seconds": every}  # fmt: skip


def figures(result: dg.ExecuteInProcessResult, url: str, seconds: float, pure: dict[str, float]) -> dict[str, Any]:
    """What the build's materializations say, per phase and per source, against the encoder alone."""
    mats = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        mats[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    phases: dict[str, float] = defaultdict(float)
    for key, meta in mats.items():
        names = ("probe", "fetch", "parse", "publish") if key.startswith("sources/") else ()
        for phase in names:
            phases[phase] += float(meta.get(f"seconds_{phase}", 0.0))
        if key.startswith("embeddings/"):
            phases["embed"] += float(meta.get("seconds", 0.0))
            for phase in EMBED_PHASES:
                phases[f"embed_{phase}"] += float(meta.get(f"embed_seconds_{phase}", 0.0))
    embedded = sum(m.get("embedded", 0) for k, m in mats.items() if k.startswith("embeddings/"))
    with database.connect(url, autocommit=True) as conn:
        totals = conn.execute("SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks),"
                              " (SELECT count(*) FROM embeddings)").fetchone() or (0, 0, 0)  # fmt: skip
    failures = [f"{e.step_key}: {e.event_specific_data.error.message.strip()[:200]}"
                for e in result.all_events if e.event_type_value == "STEP_FAILURE"]  # fmt: skip
    return {
        "sources": len([k for k in mats if k.startswith("sources/")]),
        **dict(zip(("documents", "chunks", "vectors"), totals, strict=True)),
        "graph_seconds": round(seconds, 1),
        "phases": {k: round(v, 1) for k, v in phases.items()},  # embed_write beside embed_encode, which waited
        "pipeline_embedding_chunks_per_second": round(embedded / max(phases["embed"], 1e-9), 1),
        "standalone_embedding": pure,
        "ratio_total_to_pure_embedding": round(seconds / every, 2) if (every := pure["all_chunks_seconds"]) else None,
        "peak_rss_mib": {"process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)},
        "failures": failures,
        "per_source": [[k.split("/", 1)[1], m.get("records"), m.get("chunks_written"), m.get("seconds")]
                       for k, m in sorted(mats.items()) if k.startswith("sources/")],
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True, help="snapshot folder, one sub-folder per source")
    ap.add_argument("--data-dir", type=Path, default=Path(".secrag/bench"), help="mirrors, work folders, database")
    ap.add_argument("--only", default="", help="comma-separated source names (default: all)")
    ap.add_argument("--parse-only", action="store_true", help="only parse each source's snapshot folder")
    args = ap.parse_args()
    settings = Settings(data_dir=args.data_dir)
    names = {s for s in args.only.split(",") if s}
    specs = {n: s for n, s in default_registry().items() if not names or n in names}
    if args.parse_only:
        return parse_only(args.upstream, specs)
    present = sorted(n for n in specs if snapshot_folder(n, default_registry(), args.upstream.resolve()))
    started = time.monotonic()
    mirror = build_mirror(args.upstream.resolve(), (args.data_dir / "mirrors").resolve(), specs=default_registry(),
                          sources=present)  # fmt: skip
    print(f"mirror_seconds: {time.monotonic() - started:.1f}")
    url = fresh_store(settings)
    cfg = UpstreamConfig(probe_timeout=30, fetch_timeout=900).with_mirror(mirror.repos, mirror.feeds, mirror.api_base)
    embedder = EmbedderResource(model=settings.embedding_model, batch_size=settings.embedding_batch_size,
                                threads=settings.embedding_threads)  # fmt: skip
    resources = {"store": StoreResource(database_url=url, work_dir=str((settings.data_dir / "work").resolve())),
                 "upstream": UpstreamResource.for_config(cfg), "embedder": embedder}  # fmt: skip
    defs = build_definitions(settings, {n: specs[n] for n in present}, [], resources=resources)
    started = time.monotonic()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False, run_config=quiet
    )
    seconds = time.monotonic() - started
    report = figures(result, url, seconds, standalone_embedding(url, embedder, 3000))
    per_source = report.pop("per_source")
    for key, value in report.items():
        print(f"{key}: {value}")
    print_table(["source", "records", "chunks written", "seconds"], per_source)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
