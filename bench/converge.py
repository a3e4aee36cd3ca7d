"""A sensor-driven first build converging by declarative automation alone, with figures.

    python bench/converge.py --upstream ../shared/upstream [--only mitre_car,hijacklibs,mitre_attack]
        [--data-dir .secrag/bench]

Builds local mirrors of the chosen sources, a fresh database `secrag_bench`, and one Dagster
instance; ticks every source sensor (ATT&CK last, the wrong order), then evaluates the automation
conditions and runs what they request until nothing is requested (what the automation sensor and
the run queue do). Prints the wall time, the runs it took, technique-bearing documents without
technique names (must be 0), and a no-op round (sensors tick again: nothing may run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import dagster as dg

from secrag.db import database

from build import bench_definitions, fresh_database, mirror_for, select_specs, settings_for  # noqa: E402

ATTACK = "mitre_attack"
UNENRICHED = """
SELECT count(DISTINCT d.doc_id) FROM documents d
JOIN mitre_techniques t ON t.id = ANY(d.techniques) AND NOT t.revoked AND NOT t.deprecated
JOIN chunks c ON c.doc_id = d.doc_id AND c.ordinal = 0
WHERE position(t.name IN c.enriched_text) = 0
"""


def observe(defs: dg.Definitions, instance: dg.DagsterInstance, names: list[str]) -> None:
    for name in names:
        sensor = defs.resolve_sensor_def(f"{name}_upstream")
        result = sensor(dg.build_sensor_context(instance=instance, resources=defs.resources))
        for event in result.asset_events:
            instance.report_runless_asset_event(event)


def converge(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: object) -> tuple[list[list[str]], object]:
    graph = defs.resolve_asset_graph()
    keys = [k for k in graph.get_all_asset_keys() if graph.get(k).is_materializable]
    job = defs.resolve_implicit_global_asset_job_def()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    runs: list[list[str]] = []
    while True:
        evaluation = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)  # type: ignore[arg-type]
        cursor = evaluation.cursor
        wanted = [k for k in keys if evaluation.get_num_requested(k)]
        if not wanted:
            return runs, cursor
        runs.append(sorted(k.to_user_string() for k in wanted))
        subset = job.get_subset(asset_selection=set(wanted))
        result = subset.execute_in_process(instance=instance, raise_on_error=False, run_config=quiet)
        if not result.success:
            sys.exit(f"run failed: {runs[-1]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--only", default="mitre_car,hijacklibs,mitre_attack")
    ap.add_argument("--data-dir", type=Path, default=Path(".secrag/bench"))
    args = ap.parse_args()
    settings = settings_for(args.data_dir)
    specs = select_specs(args.only)
    mirror = mirror_for(args.upstream.resolve(), args.data_dir, specs)
    url = fresh_database(settings)
    defs = bench_definitions(settings, url, mirror, specs)
    instance = dg.DagsterInstance.ephemeral()
    names = sorted(n for n in specs if n in mirror.repos and n != ATTACK) + ([ATTACK] if ATTACK in mirror.repos else [])
    _, cursor = converge(defs, instance, None)  # the automation sensor starts before any observation
    started = time.monotonic()
    observe(defs, instance, names)
    runs, cursor = converge(defs, instance, cursor)
    wall = time.monotonic() - started
    with database.connect(url) as conn:
        documents = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        bearing = conn.execute("SELECT count(*) FROM documents WHERE techniques <> '{}'").fetchone()[0]
        unenriched = conn.execute(UNENRICHED).fetchone()[0]
    print(f"sources {len(names)} ({', '.join(names)}), observed ATT&CK last")
    print(f"converged in {wall:.1f} s, {len(runs)} runs: {runs}")
    print(f"documents {documents}, technique-bearing {bearing}, without technique names {unenriched}")
    started = time.monotonic()
    observe(defs, instance, names)
    noop, _ = converge(defs, instance, cursor)
    print(f"no-op round (every sensor ticks again): {time.monotonic() - started:.1f} s, runs {noop}")


if __name__ == "__main__":
    main()
