"""How long each bounded wait takes to give up: the figures the tests no longer assert (they check the order of
events instead: the client gave up while the server still held the request, the 504 came while the lock was
held). Loopback servers and a scratch embedded PostgreSQL; a few seconds a case.

    python bench/deadlines.py [--repeat 3]

Printed per case: the configured bound and the median, worst of the repeats in seconds. The cases are the
tests' own: a download from a server that never answers (1 s; the live upstream refetch of /v1/docs/{id}/upstream
uses the same client), one that drips a byte every 0.25 s (deadline 1.5 s; headers, then body), a `git ls-remote`
probe of a repository whose server hangs (1 s), a search on a locked table (the reader role's 2 s statement
timeout, a 504) and a request while the database refuses connections (pool timeout 1 s, a 503). The outage of a
stopped server and its recovery: bench/outage.py. The D3FEND parse: bench/parse_all.py --only mitre_d3fend.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi.testclient import TestClient
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.plugins: the tests' loopback server
from pipeline.sources.probes import probe  # noqa: E402
from pipeline.sources.registry import default_registry  # noqa: E402
from pipeline.sources.upstream import UpstreamConfig  # noqa: E402
from secrag.db import database, embedded, migrations  # noqa: E402
from secrag.errors import SecragError  # noqa: E402
from secrag.files.package_data import sql_dir  # noqa: E402
from secrag.net.download_limits import DownloadLimits  # noqa: E402
from secrag.net.downloads import get_bytes  # noqa: E402
from serving.api.app import create_app  # noqa: E402
from serving.settings import ServingSettings  # noqa: E402
from tests.plugins.upstream import LoopbackPolicy, LoopbackServer  # noqa: E402


def _timed(case: Callable[[], object]) -> float:
    started = time.monotonic()
    case()
    return time.monotonic() - started


def _fails(call: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        try:
            call()
        except SecragError as exc:
            return exc
        raise AssertionError("the bounded wait did not fail")

    return run


def _report(name: str, bound: float, seconds: list[float]) -> None:
    print(f"{name:<44} bound {bound:4.1f} s  median {statistics.median(seconds):5.2f} s  worst {max(seconds):5.2f} s")


@contextmanager
def _server() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.close()


def network(repeat: int) -> None:
    policy, once = LoopbackPolicy(), DownloadLimits(max_attempts=1)
    with _server() as http:
        url = http.hang("/hang", seconds=120)
        _report("download, server never answers", 1.0, [
            _timed(_fails(lambda: get_bytes(url, policy, once, timeout=1.0))) for _ in range(repeat)
        ])  # fmt: skip
        for label, body in (("headers", b"x" * 4), ("body", b"x" * 400)):
            url = http.drip(f"/drip-{label}", body, every=0.25)
            _report(f"download, a byte every 0.25 s ({label})", 1.5, [
                _timed(_fails(lambda: get_bytes(url, policy, once, timeout=1.5))) for _ in range(repeat)  # noqa: B023
            ])  # fmt: skip
        repo = http.hang("/hijacklibs.git/info/refs", seconds=120).removesuffix("/info/refs")
        cfg = UpstreamConfig(policy=policy, limits=once, repo_overrides={"hijacklibs": repo})
        spec = default_registry()["hijacklibs"]
        _report("git ls-remote probe, server hangs", 1.0, [
            _timed(_fails(lambda: probe(spec, cfg, timeout=1.0))) for _ in range(repeat)
        ])  # fmt: skip


def _locked_search(api: TestClient, url: str) -> float:
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with database.connect(url) as conn:
            conn.execute("LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(60)
            conn.rollback()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        locked.wait(10)
        started = time.monotonic()
        response = api.post("/v1/search", json={"query": "lsass", "mode": "fts"})
        took = time.monotonic() - started
    finally:
        release.set()
        holder.join()
    assert response.status_code == 504, response.text
    return took


def _refused(api: TestClient, server: str, name: str) -> float:
    admin = database.with_database(server, "postgres")

    def allow(flag: bool) -> None:
        with database.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS {}").format(sql.Identifier(name), sql.Literal(flag))
            )
            if not flag:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])

    allow(False)
    try:
        started = time.monotonic()
        response = api.get("/v1/sources")
        took = time.monotonic() - started
    finally:
        allow(True)
    assert response.status_code == 503, response.text
    while api.get("/v1/sources").status_code != 200:
        time.sleep(0.1)
    return took


def database_waits(repeat: int) -> None:
    with tempfile.TemporaryDirectory(prefix="secrag-deadlines-") as tmp:
        pgdata = Path(tmp) / "pgdata"
        server = embedded.start(pgdata)
        try:
            url = database.ensure_database(server, "secrag")
            with database.connect(url, autocommit=True) as conn:
                migrations.migrate(conn, sql_dir())
            settings = ServingSettings(
                _env_file=None,  # type: ignore[call-arg]
                database_url=url,
                mcp_enabled=False,
                pool_timeout=1.0,
            )
            with TestClient(create_app(settings)) as api:
                assert api.get("/v1/sources").status_code == 200
                _report("search on a locked table (504)", 2.0, [_locked_search(api, url) for _ in range(repeat)])
                _report("database refuses connections (503)", 1.0, [
                    _refused(api, server, "secrag") for _ in range(repeat)
                ])  # fmt: skip
        finally:
            embedded.stop(pgdata)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # the pool logs every refused connect
    network(args.repeat)
    database_waits(args.repeat)


if __name__ == "__main__":
    main()
