"""Database requirement checks and connection errors: one clear message, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from secrag.db import database
from secrag.errors import DatabaseError
from secrag.settings import REPO_ROOT

SECRAG = [sys.executable, "-m", "secrag_cli.main"]


def test_embedded_server_meets_requirements(db_url: str) -> None:
    with database.connect(db_url) as conn:
        database.check_requirements(conn)
        assert conn.info.server_version >= 150000


def test_missing_extension_is_one_clear_error(db_url: str) -> None:
    with database.connect(db_url) as conn:
        conn.execute(
            "CREATE TEMP VIEW pg_available_extensions AS "
            "SELECT 'pg_trgm'::name AS name, '1.6'::text AS default_version, NULL::text AS installed_version"
        )
        conn.execute("SET search_path = pg_temp, pg_catalog, public")
        with pytest.raises(DatabaseError, match="lacks the pgvector extension") as info:
            database.check_requirements(conn)
        assert "install" in info.value.hint


def test_unreachable_server_names_host_and_hint() -> None:
    with pytest.raises(DatabaseError) as info:
        database.connect("postgresql://secrag@127.0.0.1:9/secrag", timeout=2)
    assert "127.0.0.1:9/secrag" in str(info.value)
    assert info.value.hint


@pytest.mark.parametrize(
    "url, needle",
    [
        ("postgresql://secrag@127.0.0.1:9/secrag", "cannot connect to PostgreSQL at 127.0.0.1:9/secrag"),
        ("not a url at all", "invalid DATABASE_URL"),
    ],
)
def test_cli_prints_one_line_and_exits_nonzero(url: str, needle: str) -> None:
    env = {**os.environ, "DATABASE_URL": url}
    result = subprocess.run(
        [*SECRAG, "status"], capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=60, check=False
    )
    assert result.returncode == 1
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_wrong_role_is_reported(pg_server_url: str) -> None:
    url = database.with_database(pg_server_url, "postgres").replace("postgres:@", "no_such_role:@", 1)
    with pytest.raises(DatabaseError, match="no_such_role"):
        database.connect(url)
