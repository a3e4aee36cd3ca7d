"""The tuning round trip: `secrag tune report` -> `secrag tune apply` -> the API serves the new value.

    python bench/tuning.py --database-url URL [--rounds 5] [--query-type forensic]

The API runs in this process on the store at URL (the owner's URL; migrated to 0012 or later). Each
round runs the report and an apply as a user would (the CLI, a new process each), then polls
GET /v1/plans until the API serves the applied value, and rolls the change back (waiting again). It
prints, per phase, the median and worst of the rounds; "served after" is from the apply's commit (the
CLI's exit) to the first GET that returned the new value. The round's audit entries stay in the store.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality import api_settings  # noqa: E402

SECRAG = [sys.executable, "-m", "secrag_cli.main"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--query-type", default="forensic")
    args = parser.parse_args()

    from fastapi.testclient import TestClient

    from serving.api.app import create_app

    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_")}
    env["DATABASE_URL"] = args.database_url
    phases: dict[str, list[float]] = {"report": [], "apply": [], "served after": [], "rollback served after": []}
    with TestClient(create_app(api_settings(args.database_url))) as api:

        def served() -> float:
            return float(api.get("/v1/plans").json()["plans"][args.query_type]["score_threshold"])

        def wait_for(value: float) -> float:
            start = time.perf_counter()
            while served() != value:
                if time.perf_counter() - start > 120:
                    raise SystemExit(f"the API did not serve {value} within 120 s")
                time.sleep(0.05)
            return time.perf_counter() - start

        before = served()
        for round_no in range(args.rounds):
            value = round(0.01 + 0.001 * round_no, 6)
            start = time.perf_counter()
            subprocess.run([*SECRAG, "tune", "report", "--json"], env=env, check=True, capture_output=True)
            phases["report"].append(time.perf_counter() - start)
            start = time.perf_counter()
            applied = subprocess.run(
                [*SECRAG, "tune", "apply", args.query_type, str(value), "--reason", "bench/tuning.py round trip"],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            phases["apply"].append(time.perf_counter() - start)
            phases["served after"].append(wait_for(value))
            entry = applied.stdout.rsplit("#", 1)[1].rstrip(")\n")
            subprocess.run(
                [*SECRAG, "tune", "rollback", entry, "--reason", "bench/tuning.py round trip"],
                env=env,
                check=True,
                capture_output=True,
            )
            phases["rollback served after"].append(wait_for(before))
    figures = {
        name: {"median_s": round(statistics.median(v), 3), "max_s": round(max(v), 3)} for name, v in phases.items()
    }
    print(json.dumps({"rounds": args.rounds, "query_type": args.query_type, "phases": figures}, indent=2))


if __name__ == "__main__":
    main()
