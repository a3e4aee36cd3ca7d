"""Two Dagster runs embedding at once, each in its own process: the measured example of two run workers.

    python bench/two_runs.py --database-url postgresql://...secrag_bench... [--sources capec,atomic]
        [--model-cache-dir .secrag/models]

bench/run_workers.py measures W encoder processes; this runs the pipeline itself. On a copy of the store
(`secrag_two_runs`, made from the given database as a template, dropped at the end) it removes the vectors
of the given sources' chunks, so that each `embeddings/<source>` asset has its whole source to embed, and
materializes those assets as real Dagster runs: one `dagster asset materialize` process per run, as
Dagster's default run launcher starts one process per run, recorded in an instance with PostgreSQL storage
(`secrag_two_runs_dagster`, as deploy/dagster.yaml keeps runs). Three ways, the vectors removed again before
each:

- one run after the other, each with one onnxruntime thread per core (the default);
- both runs at once, each with one thread per core (they contend for the cores);
- both runs at once, each with cores / 2 threads (SECRAG_EMBEDDING_THREADS set to share the machine).

The embedding step's start and end come from each run's event log; chunks per second is every embedded
chunk over the span from the first step's start to the last step's end (`steps s`: the steps' own seconds,
summed; one after the other, the span also holds the second run's process start). The process start and the
definitions' load (a few seconds per run) are printed apart. deploy/dagster.yaml runs one embedding step
at a time across runs (the `embedding` pool); these runs are launched outside the queue to measure what
two at once would give.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import psycopg
from psycopg import sql

from secrag.db import database
from secrag_cli.processes import stop_group

REPO = Path(__file__).resolve().parents[1]
COPY = "secrag_two_runs"
DAGSTER_DB = "secrag_two_runs_dagster"
INSTANCE = """storage:
  postgres:
    postgres_url: {url}
telemetry:
  enabled: false
"""


def _admin(url: str, statements: list[sql.Composed]) -> None:
    with database.connect(database.with_database(url, "postgres"), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _unembed(url: str, sources: list[str]) -> int:
    """Remove the active model's vectors of the sources' chunks: the assets then embed every chunk again."""
    with database.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()
        if row is None:
            raise SystemExit("the store has no active model")
        removed = conn.execute(
            "DELETE FROM embeddings e USING chunks c WHERE c.content_hash = e.content_hash "
            "AND c.source = ANY(%s) AND e.model_id = %s",
            [sources, row[0]],
        ).rowcount
    return int(removed)


def _materialize(source: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [
        str(Path(sys.executable).with_name("dagster")),
        "asset",
        "materialize",
        "-m",
        "pipeline.definitions",
        "--select",
        f"embeddings/{source}",
    ]
    with log.open("ab") as out:
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _step_spans(instance: dg.DagsterInstance, since: float, sources: list[str]) -> dict[str, tuple[float, float, int]]:
    """Per source of the runs started after `since`: its embedding step's start and end, and chunks embedded."""
    steps = {f"embeddings__{source}": source for source in sources}  # the asset's step (its checks are others)
    spans: dict[str, tuple[float, float, int]] = {}
    for record in instance.get_run_records():
        if record.create_timestamp.timestamp() < since:
            continue
        start = end = None
        embedded = 0
        source = ""
        for entry in instance.all_logs(record.dagster_run.run_id):
            event, step = entry.dagster_event, entry.step_key or ""
            if event is None or step not in steps:
                continue
            source = steps[step]
            if event.event_type == dg.DagsterEventType.STEP_START:
                start = entry.timestamp
            elif event.event_type == dg.DagsterEventType.STEP_SUCCESS:
                end = entry.timestamp
            elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
                value = event.step_materialization_data.materialization.metadata.get("embedded")
                embedded = int(str(value.value)) if value is not None else 0
        if source and start is not None and end is not None:
            spans[source] = (start, end, embedded)
    return spans


def _scenario(
    name: str, sources: list[str], threads: int, *, together: bool, base_env: dict[str, str], copy_url: str, log: Path
) -> dict[str, float]:
    _unembed(copy_url, sources)
    env = {**base_env, "SECRAG_EMBEDDING_THREADS": str(threads)}
    since = time.time()
    started = time.monotonic()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for source in sources:
            procs.append(_materialize(source, env, log))
            if not together:
                if procs[-1].wait() != 0:
                    raise SystemExit(f"the run of {source} failed; see {log}")
        for proc in procs:
            if proc.wait() != 0:
                raise SystemExit(f"a run failed; see {log}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                stop_group(proc)
    wall = time.monotonic() - started
    with dg.DagsterInstance.get() as instance:
        spans = _step_spans(instance, since, sources)
    missing = set(sources) - set(spans)
    if missing:
        raise SystemExit(f"no embedding step recorded for {sorted(missing)}; see {log}")
    first = min(s for s, _, _ in spans.values())
    last = max(e for _, e, _ in spans.values())
    chunks = sum(n for _, _, n in spans.values())
    per_run = [n / (e - s) for s, e, n in spans.values()]
    return {
        "chunks": chunks,
        "steps": sum(e - s for s, e, _ in spans.values()),
        "span": last - first,
        "wall": wall,
        "rate": chunks / (last - first),
        "per_run": min(per_run),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True, help="the store to copy (its owner's login)")
    ap.add_argument("--sources", default="capec,atomic", help="two sources of about the same size")
    ap.add_argument("--model-cache-dir", type=Path, default=REPO / ".secrag" / "models")
    args = ap.parse_args()
    sources = [s for s in args.sources.split(",") if s]
    cores = len(os.sched_getaffinity(0))
    source_db = str(psycopg.conninfo.conninfo_to_dict(args.database_url)["dbname"])
    _admin(
        args.database_url,
        [
            sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(COPY)),
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(COPY), sql.Identifier(source_db)),
            sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DAGSTER_DB)),
            sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DAGSTER_DB)),
        ],
    )
    copy_url = database.with_database(args.database_url, COPY)
    home = Path(tempfile.mkdtemp(prefix="secrag-two-runs-"))
    (home / "dagster.yaml").write_text(INSTANCE.format(url=database.with_database(args.database_url, DAGSTER_DB)))
    os.environ["DAGSTER_HOME"] = str(home)
    base_env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SECRAG_DATABASE_URL": copy_url,
        "SECRAG_MODEL_CACHE_DIR": str(args.model_cache_dir),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
    }
    log = home / "runs.log"
    print(f"{len(sources)} runs: embeddings/{', embeddings/'.join(sources)}; {cores} cores; run logs in {log}")
    print(
        f"{'runs':<30}{'threads each':>13}{'chunks':>8}{'steps s':>9}{'span s':>8}{'chunks/s':>10}"
        f"{'slowest run/s':>15}{'wall s':>8}"
    )
    try:
        rows = [
            ("one after the other", cores, False),
            ("both at once", cores, True),
            ("both at once, cores shared", max(1, cores // len(sources)), True),
        ]
        for name, threads, together in rows:
            r = _scenario(name, sources, threads, together=together, base_env=base_env, copy_url=copy_url, log=log)
            print(
                f"{name:<30}{threads:>13}{r['chunks']:>8.0f}{r['steps']:>9.1f}{r['span']:>8.1f}{r['rate']:>10.1f}"
                f"{r['per_run']:>15.1f}{r['wall']:>8.1f}"
            )
    finally:
        _admin(
            args.database_url,
            [
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(COPY)),
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DAGSTER_DB)),
            ],
        )


if __name__ == "__main__":
    main()
