"""Commands find their project's data from any subdirectory, and create nothing anywhere else."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from secrag.settings import Settings, find_project

SECRAG = [sys.executable, "-m", "secrag_cli.main"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env.update(extra)
    return env


def test_the_project_is_found_from_a_subdirectory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "docs" / "deep").mkdir(parents=True)
    for name in ("dagster.yaml", "workspace.yaml"):
        (project / name).write_text("")
    assert find_project(project / "docs" / "deep") == project
    monkeypatch.chdir(project / "docs" / "deep")
    assert Settings(_env_file=None).data_dir == project / ".secrag"  # type: ignore[call-arg]
    assert find_project(tmp_path) is None


@pytest.mark.parametrize("command", [["status"], ["db", "migrate"], ["db", "url"], ["tune", "--help"]])
def test_commands_in_a_foreign_directory_create_nothing(tmp_path: Path, command: list[str]) -> None:
    result = subprocess.run(
        [*SECRAG, *command], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert list(tmp_path.iterdir()) == []  # no data directory, no server
    if command[-1] != "--help":
        assert result.returncode == 1
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("error: no secrag database in") and "hint:" in line


@pytest.mark.parametrize("command", [["status"], ["db", "migrate"], ["db", "url"]])
def test_commands_on_a_server_without_the_database_create_nothing(
    tmp_path: Path, pg_server_url: str, command: list[str]
) -> None:
    """A data directory whose server lacks the secrag database (dropped, or another SECRAG_DATABASE_NAME):
    one error line naming it, and the database is still absent (only `secrag run` and `db start` create it)."""
    from secrag.db import database

    name = f"absent_{uuid.uuid4().hex[:12]}"
    data_dir = Path(os.environ.get("SECRAG_TEST_DATA_DIR", Path(__file__).parents[3] / ".secrag" / "test")).resolve()
    result = subprocess.run(
        [*SECRAG, *command],
        cwd=tmp_path,
        env=_env(SECRAG_DATA_DIR=str(data_dir), SECRAG_DATABASE_NAME=name),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: no database '{name}' on the embedded PostgreSQL") and "secrag db start" in line
    with database.connect(database.with_database(pg_server_url, "postgres"), autocommit=True) as conn:
        assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None


def test_with_a_database_url_no_embedded_server_starts(tmp_path: Path, db_url: str) -> None:
    result = subprocess.run(
        [*SECRAG, "status"],
        cwd=tmp_path,
        env=_env(SECRAG_DATABASE_URL=db_url),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.iterdir()) == []


def test_serve_on_a_busy_port_is_one_line(tmp_path: Path, db_url: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [*SECRAG, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=_env(SECRAG_DATABASE_URL=db_url),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: port {port} on 127.0.0.1 is in use (Address already in use) "
        "(hint: stop what uses it or pick another with --port)"
    ]
