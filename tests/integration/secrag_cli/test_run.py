"""`secrag run`: one-line errors before anything starts (busy ports), and the plain database path."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

SECRAG = [sys.executable, "-m", "secrag_cli.main"]


def _env(tmp_path: Path, db_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update({"SECRAG_DATABASE_URL": db_url, "SECRAG_DATA_DIR": str(tmp_path / "data")})
    return env


def test_busy_port_is_a_one_line_error(tmp_path: Path, db_url: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [*SECRAG, "run", "--no-dagster", "--api-port", str(port)],
            capture_output=True,
            text=True,
            env=_env(tmp_path, db_url),
            timeout=120,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: port {port} on 127.0.0.1 is in use (Address already in use) "
        f"(hint: stop what uses it or pick another with --api-port)"
    )


def test_run_without_services_migrates_and_reports(tmp_path: Path, db_url: str) -> None:
    result = subprocess.run(
        [*SECRAG, "run", "--no-dagster", "--no-api"],
        capture_output=True,
        text=True,
        env=_env(tmp_path, db_url),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "database ready" in result.stdout and "schema version" in result.stdout
    assert "embeddings 0 (active model all-MiniLM-L6-v2)" in result.stdout
