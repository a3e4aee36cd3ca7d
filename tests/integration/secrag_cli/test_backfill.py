"""`secrag backfill` against a live Dagster (`secrag run`): the run goes through the run queue and is waited for."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from dagster import DagsterInstance
from psycopg import sql

from secrag.db import database
from tests.plugins.browser import render, visible_text
from tests.plugins.upstream import SNAPSHOT

SECRAG = [sys.executable, "-m", "secrag_cli.main"]


@contextmanager
def mock_env(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


SOURCE = "hijacklibs"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def live_dagster(tmp_path: Path, db_url: str, pg_server_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    """`secrag run --no-api` over a one-source snapshot: Dagster's production topology (a code server,
    dagster-webserver and dagster-daemon with deploy/dagster.yaml and workspace.yaml); yields (Dagster
    URL, the environment)."""
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / SOURCE).symlink_to(SNAPSHOT / SOURCE)
    instance_db = f"secrag_dagster_{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env.update(
        {
            "SECRAG_DATABASE_URL": db_url,
            "SECRAG_DATA_DIR": str(tmp_path / "data"),
            "SECRAG_UPSTREAM_MIRROR": str(snapshot),
            "SECRAG_DAGSTER_DATABASE_NAME": instance_db,
        }
    )
    port, code_port = _free_port(), _free_port()
    log = (tmp_path / "run.log").open("wb")
    proc = subprocess.Popen(
        [*SECRAG, "run", "--no-api", "--dagster-port", str(port), "--code-server-port", str(code_port)],
        env=env,
        cwd=tmp_path,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, (tmp_path / "run.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "Dagster did not come up"
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=2):
                    break
            except OSError:
                time.sleep(1)
        yield url, env
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        with database.connect(database.with_database(pg_server_url, "postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(instance_db)))


def test_backfill_queues_a_run_and_waits_for_it(
    live_dagster: tuple[str, dict[str, str]], db_url: str, tmp_path: Path
) -> None:
    """Submitted through the webserver, queued, dequeued by the daemon, run by the code server."""
    url, env = live_dagster
    result = subprocess.run(
        [*SECRAG, "backfill", SOURCE, "--wait", "--timeout", "600", "--dagster-url", url],
        env=env,
        capture_output=True,
        text=True,
        timeout=700,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"queued refresh_{SOURCE} as run" in result.stdout and "SUCCESS" in result.stdout
    assert "QUEUED" in result.stdout or "STARTING" in result.stdout or "STARTED" in result.stdout
    with database.connect(db_url) as conn:
        docs = conn.execute("SELECT count(*) FROM documents WHERE source = %s", [SOURCE]).fetchone()[0]
        state = conn.execute("SELECT state FROM source_status WHERE name = %s", [SOURCE]).fetchone()[0]
    assert docs > 0 and state == "ok"
    log = (tmp_path / "run.log").read_text(errors="replace")
    assert "dagster code server ready" in log
    assert "dagster dev" not in log and "DAGSTER_HOME" not in log  # no development-mode or instance warnings
    queued = re.search(r"as run ([0-9a-f-]{36})", result.stdout)
    assert queued is not None, result.stdout
    with _instance(env) as instance:
        # The backfill's run; the source's sensor (on in `secrag run`) may have queued one of its own.
        run = instance.get_run_by_id(queued.group(1))
        assert run is not None and run.tags["secrag/source"] == SOURCE
        kinds = {e.dagster_event.event_type_value for e in instance.all_logs(run.run_id) if e.dagster_event}
    # Enqueued by the webserver; only the daemon's run queue launches a queued run (STARTING).
    assert {"PIPELINE_ENQUEUED", "PIPELINE_STARTING", "PIPELINE_SUCCESS"} <= kinds


def test_dagster_ui_renders_the_asset_graph_offline(live_dagster: tuple[str, dict[str, str]]) -> None:
    """The webserver of the production topology serves a UI that works with no network beyond loopback:
    the global asset lineage page of a real headless Chromium shows every asset group of the code
    server's definitions and offers to materialise each materialisable asset, with no onboarding (newsletter
    sign-up) prompt over it (deploy/dagster.yaml turns it off)."""
    url, _ = live_dagster
    query = json.dumps({"query": "{ assetNodes { groupName isMaterializable } shouldShowNux }"}).encode()
    request = urllib.request.Request(f"{url}/graphql", data=query, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        data = json.load(response)["data"]
    nodes = data["assetNodes"]
    assert data["shouldShowNux"] is False
    groups = {n["groupName"] for n in nodes}
    assert {"detection", "technique", "lookups"} <= groups

    text = visible_text(render(f"{url}/asset-groups", budget_ms=30_000))

    assert "Global asset lineage" in text
    assert all(group in text for group in groups), (groups, text[:2000])
    assert f"Materialize all ({sum(n['isMaterializable'] for n in nodes)})" in text
    # The prompt's own words (dagster-webserver's CommunityNux dialog, shown a second after load on loopback).
    assert "Join the Dagster community" not in text and "Sign up for the Dagster newsletter" not in text


@contextmanager
def _instance(env: dict[str, str]) -> Iterator[DagsterInstance]:
    """The running Dagster's instance, as `. .secrag/dagster/env.sh` gives it to CLI commands."""
    home = Path(env["SECRAG_DATA_DIR"]) / "dagster"
    values = dict(re.findall(r"^export (\w+)=(.*)$", (home / "env.sh").read_text(), re.M))
    with mock_env({k: shlex.split(v)[0] for k, v in values.items()}):
        with DagsterInstance.from_config(str(home)) as instance:
            yield instance
