"""Recovery of the API after database outages of several lengths, with a real server stopped and started.

    python bench/outage.py [--outages 8,40] [--reconnect 4,60]

For each reconnect-backoff cap (SECRAG_POOL_RECONNECT_TIMEOUT; 60 s is the most the setting allows
and behaves like the old uncapped backoff for outages under a minute) and each outage length: starts
a scratch embedded server, serves the API over it, stops the server for the outage while polling
/v1/sources every 0.5 s (503 latency), starts it again and measures how long until a 200.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from secrag.db import database, embedded, migrations
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.settings import ServingSettings


def _one(pgdata: Path, url: str, outage: float, reconnect: float) -> tuple[float, float]:
    settings = ServingSettings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        mcp_enabled=False,
        pool_timeout=1.0,
        pool_reconnect_timeout=reconnect,
    )
    with TestClient(create_app(settings)) as api:
        assert api.get("/v1/sources").status_code == 200
        embedded.stop(pgdata)
        waits = []
        until = time.monotonic() + outage
        while time.monotonic() < until:
            started = time.monotonic()
            assert api.get("/v1/sources").status_code == 503
            waits.append(time.monotonic() - started)
            time.sleep(0.5)
        embedded.start(pgdata)
        back = time.monotonic()
        while api.get("/v1/sources").status_code != 200:
            time.sleep(0.05)
        return time.monotonic() - back, statistics.median(waits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outages", default="8,40")
    ap.add_argument("--reconnect", default="4,60")
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # the pool logs every failed connect of the outage
    with tempfile.TemporaryDirectory(prefix="secrag-outage-") as tmp:
        pgdata = Path(tmp) / "pgdata"
        url = database.ensure_database(embedded.start(pgdata), "secrag")
        with database.connect(url, autocommit=True) as conn:
            migrations.migrate(conn, sql_dir())
        try:
            for reconnect in (float(v) for v in args.reconnect.split(",")):
                for outage in (float(v) for v in args.outages.split(",")):
                    recovery, wait = _one(pgdata, url, outage, reconnect)
                    print(
                        f"reconnect cap {reconnect:4.0f} s  outage {outage:4.0f} s  "
                        f"recovered {recovery:6.2f} s after the server  503 median {wait * 1000:5.0f} ms"
                    )
        finally:
            embedded.stop(pgdata)


if __name__ == "__main__":
    main()
