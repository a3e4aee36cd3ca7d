"""Least privilege: the API logs in as secrag_reader and nothing it runs can write or escalate."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg import sql

from secrag.db import database
from secrag.errors import ConfigError
from serving.api.app import create_app
from serving.search.leg_runs import Sent, fetch_all
from serving.settings import ServingSettings


@pytest.fixture
def api(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    """The API with a one-connection pool, so consecutive requests share one session."""
    with TestClient(create_app(settings_for(serving_db_url, mcp_enabled=False, pool_max_size=1))) as client:
        yield client


def _refused(api: TestClient, *statements: str) -> type[Exception]:
    """The error the last statement raises on the API's own pooled connection."""
    pool = api.app.state.service.pool  # type: ignore[attr-defined]
    with pool.connection() as conn:
        for statement in statements[:-1]:
            conn.execute(statement)
        with pytest.raises(psycopg.Error) as info:
            conn.execute(statements[-1])
    return type(info.value)


def test_the_api_logs_in_as_the_reader(api: TestClient) -> None:
    pool = api.app.state.service.pool  # type: ignore[attr-defined]
    with pool.connection() as conn:
        assert conn.execute("SELECT current_user, session_user").fetchone() == ("secrag_reader", "secrag_reader")
        conn.execute("RESET ROLE")  # there is no role to go back to
        assert conn.execute("SELECT current_user").fetchone()[0] == "secrag_reader"


@pytest.mark.parametrize(
    ("statements", "error"),
    [
        (("RESET ROLE", "DELETE FROM documents"), psycopg.errors.ReadOnlySqlTransaction),
        (("SET default_transaction_read_only = off", "DELETE FROM documents"), psycopg.errors.InsufficientPrivilege),
        (
            ("SET default_transaction_read_only = off", "UPDATE sources SET description = ''"),
            psycopg.errors.InsufficientPrivilege,
        ),
        (("SET default_transaction_read_only = off", "TRUNCATE chunks"), psycopg.errors.InsufficientPrivilege),
        (("SET ROLE postgres",), psycopg.errors.InsufficientPrivilege),
        (("SET SESSION AUTHORIZATION postgres",), psycopg.errors.InsufficientPrivilege),
        (
            ("SET default_transaction_read_only = off", "COPY (SELECT 1) TO PROGRAM 'touch /tmp/secrag-pwned'"),
            psycopg.errors.InsufficientPrivilege,
        ),
        (("SELECT pg_read_file('/etc/passwd')",), psycopg.errors.InsufficientPrivilege),
        (("SELECT count(*) FROM query_log",), psycopg.errors.InsufficientPrivilege),
        (
            ("SET default_transaction_read_only = off", "CREATE TABLE public.x (a int)"),
            psycopg.errors.InsufficientPrivilege,
        ),
        (
            ("SET default_transaction_read_only = off", "ALTER ROLE secrag_reader SUPERUSER"),
            psycopg.errors.InsufficientPrivilege,
        ),
    ],
    ids=lambda v: v[-1][:40] if isinstance(v, tuple) else "",
)
def test_every_escalation_is_refused(api: TestClient, statements: tuple[str, ...], error: type[Exception]) -> None:
    assert issubclass(_refused(api, *statements), error)
    assert not Path("/tmp/secrag-pwned").exists()


def test_a_changed_limit_does_not_survive_into_the_next_request(api: TestClient) -> None:
    pool = api.app.state.service.pool  # type: ignore[attr-defined]
    with pool.connection() as conn:
        first = conn.info.backend_pid
        conn.execute("SET statement_timeout = 0")
        conn.execute("SET default_transaction_read_only = off")
    with pool.connection() as conn:
        assert conn.info.backend_pid == first  # the same session, handed out again
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "2s"
        assert conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
    assert api.post("/v1/search", json={"query": "lsass", "mode": "fts"}).status_code == 200


SESSION = ("statement_timeout", "default_transaction_read_only", "hnsw.ef_search", "plan_cache_mode")


def _session(conn: psycopg.Connection) -> tuple[str, ...]:
    return tuple(conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(*n.split(".")))).fetchone()[0] for n in SESSION)


def test_a_search_carries_the_reset_in_its_last_round_trip(api: TestClient) -> None:
    """ReaderSessions.reset_after: the page's round trip resets the connection, so the pool's reset is skipped
    once; a connection back without it still gets the pool's own."""
    service = api.app.state.service  # type: ignore[attr-defined]
    pool, sessions = service.pool, service.sessions
    with pool.connection() as conn:
        fresh = _session(conn)
        probe = Sent("SELECT current_setting('statement_timeout') AS timeout", {}, "search:probe", generic=True)
        conn.execute("SET statement_timeout = 0")
        sessions.ef_search(conn, 500)
        rows = sessions.reset_after(conn, lambda reset: fetch_all(conn, sessions.generic_plan, [probe], then=reset)[0])
        assert rows == [{"timeout": "0"}]  # the request's own statement ran before the reset
    assert fresh == ("2s", "on", "60", "force_custom_plan")
    with pool.connection() as conn:
        assert _session(conn) == fresh
        conn.execute("SET statement_timeout = 0")
    with pool.connection() as conn:
        assert _session(conn) == fresh
    assert api.post("/v1/search", json={"query": "dump lsass memory", "vec_k": 500}).json()["results"]
    with pool.connection() as conn:
        assert _session(conn) == fresh


def test_a_privileged_login_is_refused_at_start_up(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    owner = settings_for(serving_db_url, mcp_enabled=False, reader_database_url=serving_db_url)
    with pytest.raises(ConfigError, match="refusing to serve as the database role .*superuser"):
        with TestClient(create_app(owner)):
            pass
    allowed = owner.model_copy(update={"allow_privileged_reader": True})
    with TestClient(create_app(allowed)) as client:
        assert client.get("/v1/sources").status_code == 200


@pytest.fixture
def login(serving_db_url: str) -> Iterator[str]:
    """A throwaway login that holds what secrag_reader holds and nothing else (tests add one way out)."""
    name = f"secrag_t_login_{uuid.uuid4().hex[:8]}"
    with database.connect(serving_db_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE secrag_reader").format(sql.Identifier(name)))
    yield name
    with database.connect(serving_db_url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS secrag_t_elsewhere CASCADE")
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


# One way out each, granted to the login by the migrating (superuser) role; {login} is the login and
# {owner} the owner of secrag's tables.
ESCALATIONS = {
    "member of the owner": (["GRANT {owner} TO {login}"], "member of other roles"),
    "CREATEROLE": (["ALTER ROLE {login} CREATEROLE"], "CREATEROLE"),
    "CREATEDB": (["ALTER ROLE {login} CREATEDB"], "CREATEDB"),
    "REPLICATION": (["ALTER ROLE {login} REPLICATION"], "REPLICATION"),
    "BYPASSRLS": (["ALTER ROLE {login} BYPASSRLS"], "BYPASSRLS"),
    "a writable table": (["GRANT INSERT ON documents TO {login}"], "writes tables"),
    "a writable column": (["GRANT UPDATE (description) ON sources TO {login}"], "writes tables"),
    "a table in another schema": (
        [
            "CREATE SCHEMA secrag_t_elsewhere",
            "CREATE TABLE secrag_t_elsewhere.notes (note text)",
            "GRANT USAGE ON SCHEMA secrag_t_elsewhere TO {login}",
            "GRANT DELETE ON secrag_t_elsewhere.notes TO {login}",
        ],
        "writes tables",
    ),
    "a table it owns": (
        ["CREATE TABLE public.secrag_t_mine (a int)", "ALTER TABLE secrag_t_mine OWNER TO {login}"],
        "owns objects",
    ),
    "a schema it may create in": (["GRANT CREATE ON SCHEMA public TO {login}"], "creates objects"),
}


def test_a_login_holding_only_the_readers_rights_serves(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], login: str
) -> None:
    settings = settings_for(
        serving_db_url, mcp_enabled=False, reader_database_url=database.with_user(serving_db_url, login)
    )
    with TestClient(create_app(settings)) as api:
        assert api.post("/v1/search", json={"query": "lsass", "mode": "fts"}).status_code == 200


@pytest.mark.parametrize("way", list(ESCALATIONS))
def test_every_way_out_stops_the_start_up(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], login: str, way: str
) -> None:
    statements, reason = ESCALATIONS[way]
    with database.connect(serving_db_url, autocommit=True) as conn:
        owner = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'documents'").fetchone()[0]
        for statement in statements:
            conn.execute(sql.SQL(statement).format(login=sql.Identifier(login), owner=sql.Identifier(owner)))
    settings = settings_for(
        serving_db_url, mcp_enabled=False, reader_database_url=database.with_user(serving_db_url, login)
    )
    with pytest.raises(ConfigError, match=f"refusing to serve as the database role '{login}': .*{reason}"):
        with TestClient(create_app(settings)):
            pass


def test_the_query_log_writes_as_its_own_insert_only_role(
    db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    with TestClient(create_app(settings_for(db_url, query_log=True, mcp_enabled=False))) as api:
        assert api.post("/v1/search", json={"query": "T1003", "mode": "fts"}).status_code == 200
        log = api.app.state.service.query_log  # type: ignore[attr-defined]
        with log.pool.connection() as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == "secrag_querylog"
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT count(*) FROM documents")
    with database.connect(db_url) as conn:
        assert conn.execute("SELECT count(*) FROM query_log").fetchone()[0] == 1


def test_the_reader_url_alone_starts_the_api(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], tmp_path: Path
) -> None:
    """A container given only SECRAG_READER_DATABASE_URL serves, and starts no embedded server."""
    reader = database.with_user(serving_db_url, "secrag_reader")
    models = settings_for(serving_db_url).models_dir  # the exports the suite already made
    settings = settings_for(
        None, reader_database_url=reader, data_dir=tmp_path / "data", model_cache_dir=models, mcp_enabled=False
    )
    with TestClient(create_app(settings)) as api:
        assert api.get("/readyz").status_code == 200
        assert api.post("/v1/search", json={"query": "mimikatz", "k": 1}).status_code == 200
    assert not (tmp_path / "data" / "pgdata").exists()
