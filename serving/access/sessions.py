"""The API's database sessions: a least-privilege login and session limits that every request starts with.

The API logs in as secrag_reader (SELECT on the served tables, nothing else); it never holds the
owner's credentials, so no statement it runs can write, escalate or reach the server's programs.
A login that could (a superuser, a role with any other attribute, a member of any role but
secrag_reader, an owner of anything, a login that may write or create in any schema) is refused at
start-up and on every new connection unless `allow_privileged_reader` says otherwise. A request changes one
session setting, hnsw.ef_search, and only through `ReaderSessions.ef_search`; any other setting a request makes
is its transaction's (set_config(..., true); tests/unit/serving/test_session_settings.py keeps it so). Still,
every setting goes back to the session's when a connection returns to the pool (`reset`: one round trip of its
own, or a search's last one: `reset_after`), so a limit (statement_timeout, read-only transactions) that a
request changed by mistake never outlives it.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from secrag.db import database
from secrag.db.queries import Queries, one_row
from secrag.errors import ConfigError, DatabaseError
from serving.settings import ServingSettings

log = logging.getLogger(__name__)
T = TypeVar("T")

READER_ROLE = "secrag_reader"
QUERYLOG_ROLE = "secrag_querylog"
# Session defaults of reader connections; a request whose vector leg wants more than
# DEFAULT_EF_SEARCH candidates (vec_k) sets hnsw.ef_search on its connection first.
DEFAULT_EF_SEARCH = 60
MAX_EF_SEARCH = 1000
TRGM_THRESHOLD = 0.3


def reader_url(settings: ServingSettings) -> str:
    """The API's login: SECRAG_READER_DATABASE_URL, else the secrag database (DATABASE_URL's, or the
    embedded server's) as secrag_reader. With the former the API never needs the owner's URL."""
    return settings.reader_database_url or database.with_user(database.database_url(settings), READER_ROLE)


def querylog_url(settings: ServingSettings) -> str:
    """The query log's login: SECRAG_QUERYLOG_DATABASE_URL, else the secrag database as secrag_querylog."""
    return settings.querylog_database_url or database.with_user(database.database_url(settings), QUERYLOG_ROLE)


# The columns of session_privileges, in order: each names one way out.
WAYS_OUT = (
    "superuser",
    "CREATEROLE",
    "CREATEDB",
    "REPLICATION",
    "BYPASSRLS",
    "member of other roles",
    "owns objects",
    "writes tables, columns or sequences",
    "creates objects",
)


def _ways_out(conn: psycopg.Connection[Any], queries: Queries) -> list[str]:
    row = one_row(conn.execute(queries.session_privileges, {"reader": READER_ROLE}))
    return [name for name, held in zip(WAYS_OUT, row, strict=True) if held]


class ReaderSessions:
    """Configures, checks and resets the reader pool's connections, and sets hnsw.ef_search on them."""

    def __init__(self, queries: Queries, settings: ServingSettings) -> None:
        self._queries = queries
        self._allow_privileged = settings.allow_privileged_reader
        self._settings = {
            "timeout": str(settings.reader_statement_timeout_ms),
            "iterative_scan": settings.hnsw_iterative_scan,
            "max_scan_tuples": str(settings.hnsw_max_scan_tuples),
            "ef_search": str(DEFAULT_EF_SEARCH),
            "trgm_threshold": str(TRGM_THRESHOLD),
        }
        # RESET ALL and the session settings with their values (psycopg quotes them), rendered once
        self._reset: tuple[str, str] | None = None
        # connections whose request's last round trip carried the reset (reset_after): the pool's is skipped
        self._reset_by_request: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
        # hnsw.ef_search per pooled connection when not the session default (entries go with their connection)
        self._ef_by_conn: weakref.WeakKeyDictionary[psycopg.Connection[Any], str] = weakref.WeakKeyDictionary()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        """ConfigError when this login could do more than read (unless explicitly allowed)."""
        ways = _ways_out(conn, self._queries)
        if not ways:
            return
        user = one_row(conn.execute("SELECT current_user"))[0]
        if self._allow_privileged:
            log.warning("serving as a privileged role", extra={"role": user, "privileges": ", ".join(ways)})
            return
        raise ConfigError(
            f"refusing to serve as the database role {user!r}: {', '.join(ways)}",
            hint=f"let the API log in as {READER_ROLE} (SECRAG_READER_DATABASE_URL, see sql/roles.sql); "
            "SECRAG_ALLOW_PRIVILEGED_READER=true overrides this for development only",
        )

    def configure(self, conn: psycopg.Connection[Any]) -> None:
        """A new connection: autocommit, checked, with the session settings."""
        conn.autocommit = True
        self.check(conn)
        conn.execute(self._queries.session_settings, self._settings)

    def reset(self, conn: psycopg.Connection[Any]) -> None:
        """A connection back from a request: every setting it changed goes back to the session's (one round trip),
        unless the request's last round trip carried the reset already (reset_after)."""
        if conn in self._reset_by_request:
            self._reset_by_request.discard(conn)
            return
        conn.execute("\n".join(self._reset_statements(conn)))  # a query without parameters may hold two
        self._ef_by_conn.pop(conn, None)

    def reset_after(self, conn: psycopg.Connection[Any], last: Callable[[tuple[str, str]], T]) -> T:
        """`last(statements)` sends a request's last round trip with the reset's statements after its own, so the
        pool's reset needs no round trip of its own; a request must send nothing on `conn` after it."""
        result = last(self._reset_statements(conn))
        self._ef_by_conn.pop(conn, None)
        self._reset_by_request.add(conn)
        return result

    def _reset_statements(self, conn: psycopg.Connection[Any]) -> tuple[str, str]:
        if self._reset is None:
            rendered = psycopg.ClientCursor(conn).mogrify(self._queries.session_settings, self._settings)
            self._reset = ("RESET ALL;", rendered)
        return self._reset

    def ef_search(self, conn: psycopg.Connection[Any], wanted: int) -> None:
        """Set hnsw.ef_search on the connection when it differs from what the session already has."""
        value = str(min(MAX_EF_SEARCH, wanted))
        if self._ef_by_conn.get(conn, str(DEFAULT_EF_SEARCH)) != value:
            conn.execute(self._queries.search_ef, {"ef_search": value})
            self._ef_by_conn[conn] = value

    @property
    def generic_plan(self) -> str:
        """The statement that has the next one of its round trip planned once for any values (leg_runs.fetch_all)."""
        return self._queries.generic_plan

    def check_login(self, url: str, timeout: int) -> None:
        """At start-up: refuse a privileged login at once; an unreachable server only warns (503s follow)."""
        try:
            with database.connect(url, timeout=timeout, autocommit=True) as conn:
                self.check(conn)
        except DatabaseError as exc:
            log.warning("cannot check the API's database login yet", extra={"error": exc.one_line()})
