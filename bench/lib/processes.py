"""Processes a bench starts and watches: `secrag` itself, free ports, health checks, memory per process."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SECRAG = [sys.executable, "-m", "secrag_cli.main"]
DAEMON_HEALTH = "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy } } } }"
LOCATIONS = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str) -> int:
    """The status of a GET, 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except OSError:
        return 0


def graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `data` of a query to the Dagster webserver at `url`, {} when it fails."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
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
    """Resident and proportional set size of a process in MB, (0, 0) once it has exited."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return 0.0, 0.0
    kb = {line.split(":")[0]: int(line.split()[1]) for line in lines if line.startswith(("Rss:", "Pss:"))}
    return kb.get("Rss", 0) / 1024, kb.get("Pss", 0) / 1024


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


@contextmanager
def serving(env: dict[str, str], *args: str, log: Path | None = None) -> Iterator[tuple[str, int]]:
    """`secrag serve ARGS` on a free port with `env`, once GET /readyz answers 200 (at most 5 minutes): its URL
    and process id; stopped with its process group after the block. Its output goes to `log`, or nowhere."""
    from secrag_cli.processes import stop_group

    port = free_port()
    out = log.open("ab") if log else subprocess.DEVNULL
    command = [*SECRAG, "serve", "--port", str(port), *args]
    proc = subprocess.Popen(command, env=env, stdout=out, stderr=out, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while get(f"http://127.0.0.1:{port}/readyz") != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"secrag serve did not become ready; see {log or 'its GET /readyz'}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        stop_group(proc, grace=60)
        if log:
            out.close()  # type: ignore[union-attr]
