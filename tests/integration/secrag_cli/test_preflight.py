"""`secrag preflight ROLE -- COMMAND`: one line and exit 1 for a missing secret, an unreachable or
missing database and an unmigrated store; otherwise it becomes COMMAND."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid

from psycopg import sql

from secrag.db import database

SECRAG = [sys.executable, "-m", "secrag_cli.main"]
RAN = [sys.executable, "-c", "print('dagster would start')"]


def _preflight(role: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    return subprocess.run(
        [*SECRAG, "preflight", role, "--", *RAN],
        env={**clean, "SECRAG_CONNECT_TIMEOUT": "2", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_error_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip() and "Warning" not in ln and "return Path" not in ln]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and all(w in lines[0] for w in words), lines[0]
    assert "dagster would start" not in result.stdout


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_missing_instance_secret_is_one_line() -> None:
    _one_error_line(_preflight("daemon", {}), "SECRAG_DAGSTER_PG_URL is not set")


def test_an_unreachable_or_missing_instance_database_is_one_line(pg_server_url: str) -> None:
    unreachable = f"postgresql://secrag:secret@127.0.0.1:{_closed_port()}/secrag_dagster"
    _one_error_line(
        _preflight("webserver", {"SECRAG_DAGSTER_PG_URL": unreachable}), "cannot connect", "SECRAG_DAGSTER_PG_URL"
    )
    missing = database.with_database(pg_server_url, f"secrag_dagster_{uuid.uuid4().hex[:8]}")
    _one_error_line(_preflight("daemon", {"SECRAG_DAGSTER_PG_URL": missing}), "does not exist")


def test_the_code_server_needs_a_migrated_store(pg_server_url: str, db_url: str) -> None:
    instance = database.with_database(pg_server_url, "postgres")
    empty = f"secrag_empty_{uuid.uuid4().hex[:8]}"
    with database.connect(instance, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(empty)))
    try:
        unmigrated = {"SECRAG_DAGSTER_PG_URL": instance, "DATABASE_URL": database.with_database(pg_server_url, empty)}
        _one_error_line(_preflight("code-server", unmigrated), "at migration 0", "secrag db migrate")
        _one_error_line(_preflight("code-server", {"SECRAG_DAGSTER_PG_URL": instance}), "DATABASE_URL is not set")
        ready = _preflight("code-server", {"SECRAG_DAGSTER_PG_URL": instance, "DATABASE_URL": db_url})
        assert ready.returncode == 0, ready.stderr
        assert "dagster would start" in ready.stdout and "preflight code-server:" in ready.stderr
    finally:
        with database.connect(instance, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(empty)))


def test_a_store_migrated_by_a_newer_release_is_named_as_such(pg_server_url: str, db_url: str) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum, execution_ms) VALUES (999, 'future', 'x', 0)"
        )
    env = {"SECRAG_DAGSTER_PG_URL": database.with_database(pg_server_url, "postgres"), "DATABASE_URL": db_url}
    _one_error_line(_preflight("code-server", env), "at migration 999", "knows only up to")
