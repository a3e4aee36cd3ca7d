"""Connections to the secrag store: URL resolution, requirement checks, pools."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import conninfo, sql
from psycopg_pool import ConnectionPool

from secrag.db import embedded
from secrag.db.pool_checks import ReturnedConnections
from secrag.errors import DatabaseError
from secrag.settings import Settings

log = logging.getLogger(__name__)

MIN_SERVER_VERSION = 150000
MIN_VECTOR_VERSION = (0, 7)


def describe(url: str) -> str:
    """`host:port/dbname` of a URL, without credentials, for messages."""
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<unparseable DATABASE_URL>"
    host = params.get("host") or "localhost"
    port = params.get("port") or "5432"
    return f"{host}:{port}/{params.get('dbname', '')}"


def with_database(url: str, dbname: str) -> str:
    """The same server URL pointing at another database."""
    if "://" in url:
        parts = urlsplit(url)
        return urlunsplit((parts.scheme, parts.netloc, f"/{dbname}", parts.query, parts.fragment))
    return conninfo.make_conninfo(url, dbname=dbname)


def with_user(url: str, user: str) -> str:
    """The same server and database, logging in as `user` (the password is dropped: it was another role's)."""
    if "://" in url:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        kept = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("user", "password")]
        query = urlencode(kept, quote_via=quote)
        return urlunsplit((parts.scheme, f"{quote(user, safe='')}@{host}", parts.path, query, parts.fragment))
    params = conninfo.conninfo_to_dict(url)
    params.pop("password", None)
    params["user"] = user
    return conninfo.make_conninfo(**params)  # type: ignore[arg-type]


def connect(
    url: str, *, timeout: int = 5, autocommit: bool = False, **kwargs: Any
) -> psycopg.Connection[tuple[Any, ...]]:  # noqa: ANN401 - psycopg's own options
    """A connection, or DatabaseError naming the server and a fix; never a raw traceback."""
    try:
        return psycopg.connect(url, connect_timeout=timeout, autocommit=autocommit, **kwargs)
    except psycopg.OperationalError as exc:
        lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        first = lines[0] if lines else type(exc).__name__
        first = first.removeprefix("connection failed: ")
        if "password authentication failed" in str(exc) or "role" in first and "does not exist" in first:
            hint = "check the user and password in DATABASE_URL"
        elif "does not exist" in first:
            hint = "create the database or fix its name in DATABASE_URL"
        else:
            hint = "is the server running and reachable? check DATABASE_URL, or unset it to use the embedded server"
        raise DatabaseError(f"cannot connect to PostgreSQL at {describe(url)}: {first}", hint=hint) from exc
    except psycopg.ProgrammingError as exc:
        raise DatabaseError(
            f"invalid DATABASE_URL: {str(exc).strip()}", hint="use postgresql://user:pass@host:5432/db"
        ) from exc


def check_requirements(conn: psycopg.Connection) -> None:
    """PostgreSQL >= 15 with pgvector >= 0.7 and pg_trgm available, or one clear DatabaseError."""
    where = describe(conn.info.dsn)
    version = conn.info.server_version
    if version < MIN_SERVER_VERSION:
        raise DatabaseError(
            f"PostgreSQL at {where} is version {version // 10000}; secrag needs 15 or newer",
            hint="upgrade the server or unset DATABASE_URL to use the embedded one",
        )
    rows = conn.execute(
        "SELECT name, default_version, installed_version FROM pg_available_extensions "
        "WHERE name IN ('vector', 'pg_trgm')"
    ).fetchall()
    available = {name: (installed or default) for name, default, installed in rows}
    missing = [name for name in ("vector", "pg_trgm") if name not in available]
    if missing:
        names = " and ".join("pgvector" if m == "vector" else m for m in missing)
        raise DatabaseError(
            f"PostgreSQL at {where} lacks the {names} extension",
            hint="install it on the server (e.g. the postgresql-NN-pgvector package; "
            "pg_trgm ships in contrib), or unset DATABASE_URL to use the embedded server",
        )
    vector_version = tuple(int(p) for p in available["vector"].split(".")[:2])
    if vector_version < MIN_VECTOR_VERSION:
        raise DatabaseError(
            f"PostgreSQL at {where} has pgvector {available['vector']}; secrag needs 0.7 or newer",
            hint="upgrade pgvector on the server",
        )


def server_url(settings: Settings, *, create: bool = False) -> str:
    """The configured server (DATABASE_URL: no embedded server ever starts) or the embedded one,
    started on demand; only with create=True may that make a new data directory."""
    if settings.database_url:
        return settings.database_url
    return embedded.start(settings.pgdata, settings.embedded_shared_buffers, create=create)


def database_exists(conn: psycopg.Connection[Any], dbname: str) -> bool:
    """Whether the server `conn` is on has a database `dbname`."""
    return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [dbname]).fetchone() is not None


def ensure_database(base_url: str, dbname: str, *, timeout: int = 5) -> str:
    """Create `dbname` on the server of base_url if absent; returns its URL."""
    with connect(with_database(base_url, "postgres"), timeout=timeout, autocommit=True) as conn:
        if not database_exists(conn, dbname):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
            log.info("created database", extra={"database": dbname})
    return with_database(base_url, dbname)


def database_url(settings: Settings, *, create: bool = False) -> str:
    """URL of the secrag database: DATABASE_URL as given, or the embedded server's secrag database.
    Only with create=True may that make a new data directory or database; otherwise a missing one is an
    error with a hint, and nothing is created."""
    if settings.database_url:
        return settings.database_url
    server = embedded.start(settings.pgdata, settings.embedded_shared_buffers, create=create)
    if create:
        return ensure_database(server, settings.database_name, timeout=settings.connect_timeout)
    with connect(with_database(server, "postgres"), timeout=settings.connect_timeout, autocommit=True) as conn:
        exists = database_exists(conn, settings.database_name)
    if not exists:
        raise DatabaseError(
            f"no database {settings.database_name!r} on the embedded PostgreSQL in {settings.pgdata}",
            hint="`make run` or `secrag db start` creates it (SECRAG_DATABASE_NAME names another)",
        )
    return with_database(server, settings.database_name)


def open_pool(
    url: str,
    *,
    min_size: int = 1,
    max_size: int = 4,
    timeout: float = 5.0,
    configure: Callable[[psycopg.Connection], None] | None = None,
    reset: Callable[[psycopg.Connection], None] | None = None,
    name: str = "secrag",
    check: bool = False,
    reconnect_timeout: float = 300.0,
    connect_timeout: int = 5,
) -> ConnectionPool:
    """A (not yet opened) connection pool with the pgvector type registered on every connection.

    `configure` runs first on a new connection (e.g. to switch to autocommit), `reset` whenever one comes
    back from use (e.g. to undo session settings); `check` tests each connection before handing it out
    (secrag/db/pool_checks.py: a round trip only when its socket is not quiet or it came back a while ago), so a
    restarted server costs one failed check, not a failed request.
    """

    def _configure(conn: psycopg.Connection) -> None:
        from pgvector.psycopg import register_vector

        if configure is not None:
            configure(conn)
        register_vector(conn)
        if not conn.autocommit:
            conn.commit()  # the pool wants idle connections back

    returned = ReturnedConnections(reset)
    return ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        timeout=timeout,
        open=False,
        configure=_configure,
        reset=returned.reset if check else reset,
        name=name,
        reconnect_timeout=reconnect_timeout,
        check=returned.check if check else None,
        kwargs={"connect_timeout": connect_timeout},
    )
