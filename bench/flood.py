"""Health under a flood: /readyz latency while anonymous clients send long queries, quotas on and off.

    python bench/flood.py --database-url postgresql://...?host=... [--clients 12] [--words 900] [--seconds 30]

For each setting (the default anonymous quotas, then quotas off) starts `secrag serve` on a free
port against the database, lets `--clients` threads send POST /v1/search with a `--words`-word
query in a loop (no pause; a 429 is retried after 50 ms), and polls GET /readyz every 0.25 s.
Prints /readyz p50/p95/max, the flood's answers by status and its searches per second.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter

WORDS = (
    "process injection lsass memory dump credential access powershell encoded command scheduled task "
    "registry run key persistence lateral movement remote service wmi execution defense evasion "
    "obfuscated files kerberos ticket golden silver dcsync privilege escalation token impersonation"
).split()

SETTINGS = {
    "quotas on (defaults)": {},
    "quotas off": {"SECRAG_ANONYMOUS_RATE_PER_MINUTE": "0", "SECRAG_ANONYMOUS_HEAVY_CONCURRENCY": "0"},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if proc.poll() is not None:
            raise SystemExit(f"secrag serve exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("secrag serve did not become ready")


def _flood(port: int, words: int, stop: threading.Event, statuses: Counter[int], lock: threading.Lock) -> None:
    rng = random.Random()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        body = json.dumps({"query": " ".join(rng.choice(WORDS) for _ in range(words)), "k": 10})
        try:
            conn.request("POST", "/v1/search", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            status = response.status
        except OSError:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            status = 0
        with lock:
            statuses[status] += 1
        if status == 429:
            time.sleep(0.05)


def _probe(port: int, stop: threading.Event, latencies: list[float]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while not stop.is_set():
        started = time.monotonic()
        conn.request("GET", "/readyz")
        conn.getresponse().read()
        latencies.append((time.monotonic() - started) * 1000)
        time.sleep(0.25)


def run(database_url: str, env_extra: dict[str, str], clients: int, words: int, seconds: float) -> dict[str, object]:
    port = _free_port()
    env = {**os.environ, "SECRAG_DATABASE_URL": database_url, **env_extra}
    cmd = [sys.executable, "-m", "secrag_cli.main", "serve", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, env=env)
    try:
        _wait_ready(port, proc)
        stop, lock = threading.Event(), threading.Lock()
        statuses: Counter[int] = Counter()
        latencies: list[float] = []
        threads = [threading.Thread(target=_flood, args=(port, words, stop, statuses, lock)) for _ in range(clients)]
        threads.append(threading.Thread(target=_probe, args=(port, stop, latencies)))
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    latencies.sort()
    return {
        "readyz_p50_ms": round(statistics.median(latencies), 1),
        "readyz_p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1),
        "readyz_max_ms": round(latencies[-1], 1),
        "probes": len(latencies),
        "flood_statuses": dict(sorted(statuses.items())),
        "searches_per_s": round(statuses[200] / seconds, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True, help="the secrag database (its owner; the API logs in as reader)")
    ap.add_argument("--clients", type=int, default=12)
    ap.add_argument("--words", type=int, default=900)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    print(f"{args.clients} anonymous clients, {args.words}-word queries, {args.seconds:.0f} s each")
    for name, extra in SETTINGS.items():
        print(f"{name:22} {json.dumps(run(args.database_url, extra, args.clients, args.words, args.seconds))}")


if __name__ == "__main__":
    main()
