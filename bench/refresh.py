"""Refresh figures on the store bench/build.py left behind.

    python bench/refresh.py --upstream ../shared/upstream [--data-dir .secrag/bench] [--source mitre_car]

(a) no-op refresh of every source through the graph: seconds, chunks embedded (expected 0);
(b) one upstream commit changing one record of --source: records updated and chunks embedded
    (only that record's changed chunks). The commit is made on the bench mirror, which the next
    bench/build.py rebuilds from the snapshot.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg

from secrag.db import database

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for the tests' mirror helper
from tests.plugins.mirror_changes import add_commit  # noqa: E402

from build import (  # noqa: E402
    bench_definitions,
    failures,
    materializations,
    mirror_for,
    run_graph,
    select_specs,
    settings_for,
)


def embedded(mats: dict) -> int:
    return sum(int(m.get("embedded", 0)) for k, m in mats.items() if k.startswith("embeddings/"))


def change_one_record(mirror, source: str) -> tuple[str, str]:  # noqa: ANN001 - Mirror
    git = ["git", "--git-dir", str(mirror.git_dir(source))]
    files = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.split()
    rel = sorted(f for f in files if f.endswith((".yaml", ".yml")))[0]
    data = subprocess.run([*git, "show", f"HEAD:{rel}"], check=True, capture_output=True).stdout
    changed = data.replace(b"description: ", b"description: Benchmark edit. ", 1)
    if changed == data:
        changed = data + b"\n# benchmark edit\n"
    return rel, add_commit(mirror, source, {rel: changed}, message="benchmark: change one record")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, default=Path(".secrag/bench"))
    ap.add_argument("--only", default="", help="comma-separated sources (default: all)")
    ap.add_argument("--source", default="mitre_car", help="source whose upstream gets one changed record")
    args = ap.parse_args()
    settings = settings_for(args.data_dir)
    specs = select_specs(args.only)
    mirror = mirror_for(args.upstream.resolve(), args.data_dir, specs)
    url = database.with_database(database.server_url(settings, create=True), "secrag_bench")
    defs = bench_definitions(settings, url, mirror, specs)

    result, seconds = run_graph(defs, dg.AssetSelection.all() - dg.AssetSelection.key_prefixes("upstream"))
    mats = materializations(result)
    changed_records = sum(
        int(m.get("inserted", 0)) + int(m.get("updated", 0)) + int(m.get("deleted", 0))
        for k, m in mats.items()
        if k.startswith("sources/")
    )
    print(  # noqa: T201
        f"(a) no-op refresh of {len([k for k in mats if k.startswith('sources/')])} sources: "
        f"{seconds:.1f}s, records changed {changed_records}, chunks embedded {embedded(mats)}"
    )
    for line in failures(result):
        print(f"    failed: {line}")  # noqa: T201

    rel, commit = change_one_record(mirror, args.source)
    started = time.monotonic()
    result, seconds = run_graph(defs, f"key:sources/{args.source} or key:embeddings/{args.source}")
    mats = materializations(result)
    meta = mats.get(f"sources/{args.source}", {})
    print(  # noqa: T201
        f"(b) one changed record ({args.source}:{rel} at {commit[:12]}): {time.monotonic() - started:.1f}s, "
        f"updated {meta.get('updated')}, unchanged {meta.get('unchanged')}, chunks embedded {embedded(mats)}"
    )
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")  # noqa: T201
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
