"""The embedded server: clear one-line errors for bad data directories, reuse when already running."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from secrag import embedded
from secrag.errors import EmbeddedServerError


def test_a_folder_that_is_not_a_data_directory_is_refused(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    (pgdata / "notes.txt").write_text("precious")
    with pytest.raises(EmbeddedServerError, match="not a PostgreSQL data directory"):
        embedded.start(pgdata)
    assert (pgdata / "notes.txt").read_text() == "precious"  # nothing touched


def test_an_uncreatable_data_directory_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(EmbeddedServerError, match="cannot create data directory"):
        embedded.start(blocker / "sub" / "pgdata")


def test_status_of_a_missing_server_does_not_start_it(tmp_path: Path) -> None:
    st = embedded.status(tmp_path / "pgdata")
    assert (st.initialised, st.running, st.pid) == (False, False, None)


def test_start_reuses_a_running_server_and_stop_stops_it(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    uri = embedded.start(pgdata)
    try:
        first = embedded.status(pgdata)
        assert first.running and first.initialised and uri
        assert embedded.start(pgdata) == uri
        assert embedded.status(pgdata).pid == first.pid
    finally:
        assert embedded.stop(pgdata) is True
    assert embedded.status(pgdata).running is False
    assert embedded.stop(pgdata) is False


def test_start_applies_shared_buffers_once(tmp_path: Path) -> None:
    import psycopg

    pgdata = tmp_path / "pgdata"
    uri = embedded.start(pgdata, shared_buffers="160MB")
    try:
        with psycopg.connect(uri) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone()[0] == "160MB"
        pid = embedded.status(pgdata).pid
        assert embedded.start(pgdata, shared_buffers="160MB") == uri
        assert embedded.status(pgdata).pid == pid  # already applied: no second restart
    finally:
        embedded.stop(pgdata)


def test_cli_reports_bad_data_dir_in_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "pgdata").mkdir(parents=True)
    (data_dir / "pgdata" / "junk").write_text("x")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRAG_DATABASE_URL")}
    env["SECRAG_DATA_DIR"] = str(data_dir)
    result = subprocess.run([sys.executable, "-m", "secrag.cli.main", "db", "start"], capture_output=True,
                            text=True, env=env, cwd=tmp_path, timeout=60, check=False)
    assert result.returncode == 1
    assert result.stderr.strip().startswith("error: ") and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
