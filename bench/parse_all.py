"""Parse every registered source from a snapshot folder and print per-source figures.

python bench/parse_all.py --upstream ../shared/upstream [--json] [--only sigma,atomic]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, required=True, help="snapshot folder, one sub-folder per source")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--only", default="", help="comma-separated source names")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    rows = []
    started = time.monotonic()
    for name, spec in sorted(default_registry().items()):
        if only and name not in only:
            continue
        t0 = time.monotonic()
        try:
            outcome = parse_source(spec, args.upstream / name)
            rows.append(
                {
                    "source": name,
                    "records": len(outcome.records),
                    "with_techniques": outcome.with_techniques,
                    "skipped_files": len(outcome.skipped),
                    "files": outcome.files_seen,
                    "seconds": round(time.monotonic() - t0, 2),
                }
            )
        except ParseError as exc:
            rows.append({"source": name, "error": str(exc), "seconds": round(time.monotonic() - t0, 2)})
    total = {
        "records": sum(r.get("records", 0) for r in rows),
        "with_techniques": sum(r.get("with_techniques", 0) for r in rows),
        "skipped_files": sum(r.get("skipped_files", 0) for r in rows),
        "seconds": round(time.monotonic() - started, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if args.json:
        print(json.dumps({"sources": rows, "total": total}, indent=2))
    else:
        print(f"{'source':<20} {'records':>8} {'w/ tech':>8} {'share':>6} {'skipped':>8} {'seconds':>8}")
        for r in rows:
            if "error" in r:
                print(f"{r['source']:<20} ERROR {r['error']}")
                continue
            share = r["with_techniques"] / r["records"] if r["records"] else 0
            print(
                f"{r['source']:<20} {r['records']:>8} {r['with_techniques']:>8} {share:>6.0%} "
                f"{r['skipped_files']:>8} {r['seconds']:>8.2f}"
            )
        print(
            f"{'TOTAL':<20} {total['records']:>8} {total['with_techniques']:>8} {'':>6} "
            f"{total['skipped_files']:>8} {total['seconds']:>8.2f}  peak RSS {total['peak_rss_mib']} MiB"
        )
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
