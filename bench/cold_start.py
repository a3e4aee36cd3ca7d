"""Cold start to healthy of `make run` (`secrag run`) on a fresh data directory, and the API's memory.

    python bench/cold_start.py [--upstream ../shared/upstream] [--api-workers 2]

Starts `secrag run` with a new SECRAG_DATA_DIR (so the embedded PostgreSQL is initialised, migrated and
the Dagster instance database created, as on a fresh clone whose .venv and model exports exist) and
prints, from the launch, when each part was first healthy:

- the API: GET /readyz is 200 (database, schema and model ready);
- the Dagster webserver: GET /server_info answers;
- the code location: the webserver's workspace has loaded `pipeline` (its asset graph is served);
- the daemon: its heartbeat is recorded (GraphQL `instance.daemonHealth`).

Then, with the same store, `secrag serve --workers N` is started and, after one search per worker,
the resident and proportional set size of each API worker process is printed. Everything started is
stopped by process group at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from secrag_cli.processes import stop_group

SECRAG = [sys.executable, "-m", "secrag_cli.main"]
DAEMON_HEALTH = "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy } } } }"
LOCATIONS = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except OSError:
        return 0


def graphql(url: str, query: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/graphql", data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return dict(json.load(response).get("data") or {})
    except (OSError, ValueError):
        return {}


def location_loaded(url: str) -> bool:
    entries = (graphql(url, LOCATIONS).get("workspaceOrError") or {}).get("locationEntries") or []
    return any(e["loadStatus"] == "LOADED" for e in entries)


def daemon_healthy(url: str) -> bool:
    health = ((graphql(url, DAEMON_HEALTH).get("instance") or {}).get("daemonHealth") or {}).get("allDaemonStatuses")
    return bool(health) and all(d["healthy"] for d in health if d["daemonType"] in ("SENSOR", "QUEUED_RUN_COORDINATOR"))


def memory_mb(pid: int) -> tuple[float, float]:
    rss = pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
    return rss / 1024, pss / 1024


def children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(proc.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def cold_start(env: dict[str, str], workdir: Path) -> Path:
    dagster, api, code = free_port(), free_port(), free_port()
    args = ["run", "--dagster-port", str(dagster), "--api-port", str(api), "--code-server-port", str(code)]
    log = (workdir / "run.log").open("wb")
    started = time.monotonic()
    proc = subprocess.Popen([*SECRAG, *args], env=env, cwd=workdir, stdout=log, stderr=log, start_new_session=True)
    dagster_url = f"http://127.0.0.1:{dagster}"
    checks = {
        "API ready (/readyz 200)": lambda: get(f"http://127.0.0.1:{api}/readyz") == 200,
        "Dagster webserver (/server_info)": lambda: get(f"{dagster_url}/server_info") == 200,
        "code location loaded": lambda: location_loaded(dagster_url),
        "daemon healthy (sensors, run queue)": lambda: daemon_healthy(dagster_url),
    }
    seen: dict[str, float] = {}
    try:
        while len(seen) < len(checks):
            if proc.poll() is not None:
                raise SystemExit(f"secrag run exited with {proc.returncode}; see {workdir / 'run.log'}")
            if time.monotonic() - started > 600:
                raise SystemExit(f"not healthy after 600 s: {sorted(set(checks) - set(seen))}")
            for name, check in checks.items():
                if name not in seen and check():
                    seen[name] = time.monotonic() - started
            time.sleep(0.25)
    finally:
        stop_group(proc, grace=60)
        log.close()
    for name, seconds in sorted(seen.items(), key=lambda kv: kv[1]):
        print(f"{name:<40} {seconds:6.1f} s")
    print(f"{'healthy (all of them)':<40} {max(seen.values()):6.1f} s")
    return workdir


def api_memory(env: dict[str, str], workdir: Path, workers: int) -> None:
    port = free_port()
    log = (workdir / "serve.log").open("wb")
    proc = subprocess.Popen(
        [*SECRAG, "serve", "--port", str(port), "--workers", str(workers)],
        env=env,
        cwd=workdir,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while get(f"http://127.0.0.1:{port}/readyz") != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"secrag serve did not become ready; see {workdir / 'serve.log'}")
            time.sleep(0.5)
        body = json.dumps({"query": "credential dumping from lsass", "k": 10}).encode()
        for _ in range(workers * 8):  # spread over the workers so each has encoded and searched
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/search", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30):
                pass
        pids = children(proc.pid)
        workers_pids = [  # uvicorn's workers (not multiprocessing's resource tracker beside them)
            pid for pid in pids if b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        print(f"secrag serve --workers {workers}: {len(workers_pids)} worker processes")
        for pid in sorted(workers_pids):
            rss, pss = memory_mb(pid)
            print(f"  worker {pid}: RSS {rss:6.0f} MB, PSS {pss:6.0f} MB")
        rss, pss = memory_mb(proc.pid)
        print(f"  launcher {proc.pid}: RSS {rss:6.0f} MB, PSS {pss:6.0f} MB")
    finally:
        stop_group(proc, grace=60)
        log.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", type=Path, help="SECRAG_UPSTREAM_MIRROR (offline snapshots)")
    ap.add_argument("--api-workers", type=int, default=2)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="secrag-cold-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env["SECRAG_DATA_DIR"] = str(workdir / "data")
    if args.upstream:
        env["SECRAG_UPSTREAM_MIRROR"] = str(args.upstream.resolve())
    print(f"fresh data directory {env['SECRAG_DATA_DIR']}")
    cold_start(env, workdir)
    api_memory(env, workdir, args.api_workers)
    from secrag.db import embedded

    embedded.stop(Path(env["SECRAG_DATA_DIR"]) / "pgdata")


if __name__ == "__main__":
    main()
