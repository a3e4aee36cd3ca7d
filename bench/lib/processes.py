"""Processes and HTTP as a bench uses them: `secrag` itself, free ports, requests, memory per process."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SECRAG = [sys.executable, "-m", "secrag_cli.main"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def request(url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A GET, or a POST of `body`: the status and the answer, (0, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, headers or {}), timeout=10) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""
    except OSError:
        return 0, b""


def post_json(url: str, body: Any) -> Any:  # noqa: ANN401
    """The JSON answer to a POST of JSON, {} when it fails."""
    status, answer = request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        return json.loads(answer) if status == 200 else {}
    except ValueError:
        return {}


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
        try:
            if proc.name.isdigit() and int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


@contextmanager
def serving(env: dict[str, str], *args: str, log: Path | None = None, command: str = "serve",
            ready: str = "/readyz") -> Iterator[tuple[str, int]]:  # fmt: skip
    """`secrag serve ARGS` (or `command`) on a free port with `env`, once GET `ready` answers 200 (at most 5
    minutes): its URL and process id; stopped with its process group after the block. Its output goes to `log`."""
    from secrag_cli.processes import stop_group

    port = free_port()
    out = log.open("ab") if log else subprocess.DEVNULL
    proc = subprocess.Popen([*SECRAG, command, "--port", str(port), *args], env=env, stdout=out, stderr=out,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while request(f"http://127.0.0.1:{port}{ready}")[0] != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"secrag {command} did not become ready; see {log or f'its GET {ready}'}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        stop_group(proc, grace=60)
        if log:
            out.close()  # type: ignore[union-attr]
