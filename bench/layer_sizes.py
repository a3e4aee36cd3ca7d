"""POST /v1/layers/compare's worst cases over HTTP: request bytes, status, answer bytes, time and the API's peak RSS.

    python bench/layer_sizes.py build --database-url postgresql://.../secrag_layers   # once: ATT&CK's techniques
    python bench/layer_sizes.py measure --database-url postgresql://.../secrag_layers [--root /tmp/before] \
        [--case issue-150 --case issue-300 ...]

`build` migrates the (existing, empty) database and writes the technique lookup of ATT&CK's three domains from
--upstream (what a layer is read against; no documents, no vectors): seconds. `measure` starts, per case, a fresh
API process (uvicorn over serving.api.app:create_app, from --root's tree: the checkout, or a worktree of another
commit; warm-up, caches and quotas off), sends the case once and prints the request's bytes, the status, the
answer's bytes, the request's wall seconds, the API process's RSS before the request and its peak RSS during it
(VmHWM, reset just before the request through /proc/PID/clear_refs, since start-up's peak is higher).

Cases: `issue-N`, the issue's: a left layer of N entries of one technique (T1003), each under a tactic of its own
name and with a comment of 75 characters, union a right layer of another; `max-real`, a large answer within the
bounds: a left layer of 2,000 entries, Enterprise's active (technique, tactic) pairs in turn (each pair up to
three times), each with a comment of 400 characters (the body just within its 1 MiB cap), union a small right
layer; `past-limit`, 2,001 entries (a 422); `past-bound`, a comparison whose answer would pass
SECRAG_MAX_ANSWER_BYTES: two layers of 2,000 entries, techniques under every tactic of the domain, both named with
1,000 characters that JSON writes as six bytes each, which every entry's comment repeats (a 413 before the layer
is built).
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
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

BUNDLES = ("enterprise-attack/enterprise-attack.json", "mobile-attack/mobile-attack.json", "ics-attack/ics-attack.json")
CASES = ("issue-150", "issue-300", "issue-600", "issue-1200", "max-real", "past-limit", "past-bound")
REPO = Path(__file__).resolve().parent.parent


def build(url: str, upstream: Path) -> None:
    from pipeline.sources.mitre_lookup import techniques_from_bundle
    from pipeline.store.store import Store
    from secrag.db import database, migrations
    from secrag.files.package_data import sql_dir

    with database.connect(url, autocommit=True) as conn:
        migrations.migrate(conn, sql_dir())
        techniques = [t for b in BUNDLES for t in techniques_from_bundle(upstream / "mitre_attack" / b)]
        Store(sql_dir()).replace_techniques(conn, techniques, "bench")
    print(f"{len(techniques)} techniques")  # noqa: T201 - a bench prints


def _layer(name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "domain": "enterprise-attack", "versions": {"layer": "4.5"}, "techniques": entries}


def _pairs(url: str) -> list[tuple[str, str]]:
    """Every (technique, tactic) of Enterprise's active techniques, by id."""
    from secrag.db import database

    with database.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, tactics FROM mitre_techniques WHERE domain = 'enterprise' AND NOT revoked AND NOT deprecated "
            "ORDER BY id"
        ).fetchall()
    return [(tid, tactic) for tid, tactics in rows for tactic in tactics]


def body_of(case: str, url: str) -> dict[str, Any]:
    if case.startswith("issue-"):
        n = int(case.removeprefix("issue-"))
        left = [
            {"techniqueID": "T1003", "tactic": f"tactic-{i:04d}", "score": 1, "comment": f"{i:04d} " + "x" * 70}
            for i in range(n)
        ]
        right = [{"techniqueID": "T1059", "score": 2}]
        return {"left": _layer("left", left), "right": _layer("right", right), "operation": "union"}
    pairs = _pairs(url)
    if case == "max-real":
        chosen = (pairs * 3)[:2000]  # a pair twice is an entry twice: same bound, repeated comments merged once
        left = [
            {"techniqueID": t, "tactic": c, "score": 1, "comment": f"{i} " + "l" * 400}
            for i, (t, c) in enumerate(chosen)
        ]
        right = [{"techniqueID": t, "tactic": c, "score": 2, "comment": "r" * 40} for t, c in pairs[:10]]
        return {"left": _layer("left", left), "right": _layer("right", right), "operation": "union"}
    if case == "past-limit":
        left = [{"techniqueID": t, "tactic": c} for t, c in (pairs * 3)[:2001]]
        return {"left": _layer("left", left), "right": _layer("right", []), "operation": "union"}
    if case == "past-bound":
        # a layer's name is in every entry's comment: control characters, six bytes each in JSON
        name = "\x01" * 1000
        tactics = sorted({c for _, c in pairs})  # any of the domain's tactics may be named for any technique
        every = [(t, c) for t in sorted({t for t, _ in pairs}) for c in tactics]
        left = [{"techniqueID": t, "tactic": c, "comment": "\x02" * 10} for t, c in every[:2000]]
        right = [{"techniqueID": t, "tactic": c, "comment": "\x03" * 10} for t, c in every[2000:4000]]
        return {"left": _layer(name, left), "right": _layer(name, right), "operation": "union"}
    raise SystemExit(f"unknown case {case!r}; cases: {', '.join(CASES)}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _peak_rss_mib(pid: int) -> tuple[float, float]:
    """The process's resident set now and its peak (VmRSS, VmHWM), MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Vm")
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _serve(root: Path, url: str, port: int, workdir: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "SECRAG_DATABASE_URL": url,
        "SECRAG_WARM_UP": "false",
        "SECRAG_RESULT_CACHE_SIZE": "0",
        "SECRAG_QUERY_CACHE_SIZE": "0",
        "SECRAG_ANONYMOUS_RATE_PER_MINUTE": "0",
        "SECRAG_ANONYMOUS_HEAVY_CONCURRENCY": "0",
        "SECRAG_MCP_ENABLED": "false",
    }
    command = [sys.executable, "-m", "uvicorn", "serving.api.app:create_app", "--factory", "--port", str(port)]
    server = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [*command, "--log-level", "warning"], cwd=workdir, env=env
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()  # noqa: S310
            return server
        except OSError:
            time.sleep(0.3)
    server.terminate()
    raise SystemExit("the API did not start within 120 s")


def measure(url: str, root: Path, cases: list[str]) -> None:
    print("case        request_B  status     answer_B   wall_s  rss_before_MiB  peak_rss_MiB")  # noqa: T201
    for case in cases:
        payload = json.dumps(body_of(case, url)).encode()
        port = _free_port()
        with tempfile.TemporaryDirectory() as workdir:  # no .env of the checkout
            server = _serve(root, url, port, workdir)
            try:
                Path(f"/proc/{server.pid}/clear_refs").write_text("5")  # the peak from here: the request's
                rss_before, _ = _peak_rss_mib(server.pid)
                request = urllib.request.Request(  # noqa: S310 - loopback
                    f"http://127.0.0.1:{port}/v1/layers/compare",
                    data=payload,
                    headers={"content-type": "application/json"},
                )
                started = time.perf_counter()
                try:
                    with urllib.request.urlopen(request, timeout=1800) as response:  # noqa: S310
                        status, answer = response.status, response.read()
                except urllib.error.HTTPError as refused:
                    status, answer = refused.code, refused.read()
                wall = time.perf_counter() - started
                _, peak = _peak_rss_mib(server.pid)
            finally:
                server.terminate()
                server.wait(timeout=30)
        print(  # noqa: T201
            f"{case:<11} {len(payload):>9,} {status:>7} {len(answer):>12,} {wall:>8.2f} {rss_before:>15.0f} "
            f"{peak:>13.0f}"
        )
        if status != 200:
            print(f"            {answer[:300].decode(errors='replace')}")  # noqa: T201


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("build", "measure"))
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--upstream", type=Path, default=REPO.parent / "shared" / "upstream")
    parser.add_argument("--root", type=Path, default=REPO, help="the tree the API runs from (default: this one)")
    parser.add_argument("--case", action="append", choices=CASES, help="default: every case")
    args = parser.parse_args()
    if args.command == "build":
        build(args.database_url, args.upstream)
    else:
        measure(args.database_url, args.root.resolve(), args.case or list(CASES))


if __name__ == "__main__":
    main()
