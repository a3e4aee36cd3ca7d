"""Real PostgreSQL for tests: the embedded server (or TEST_DATABASE_URL), a migrated template
database per session, and a fresh copy of it per test (CREATE DATABASE ... TEMPLATE, ~0.1 s)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from secrag.db import database, embedded, migrations
from secrag.files.package_data import sql_dir
from secrag.settings import REPO_ROOT

SQL_DIR = sql_dir()


def _drop(server_url: str, name: str) -> None:
    with database.connect(database.with_database(server_url, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _create(server_url: str, name: str, template: str | None = None) -> str:
    with database.connect(database.with_database(server_url, "postgres"), autocommit=True) as conn:
        stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template:
            stmt = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template))
        conn.execute(stmt)
    return database.with_database(server_url, name)


@contextmanager
def migrated_copy(server_url: str, template: str, name: str) -> Iterator[str]:
    """A database `name` copied from the migrated template (replacing a leftover of an interrupted run), its URL;
    dropped after. For fixtures that build a store of their own (a corpus, whole snapshots) once per module."""
    _drop(server_url, name)
    try:
        yield _create(server_url, name, template=template)
    finally:
        _drop(server_url, name)


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """URL of a PostgreSQL server the tests may create databases on."""
    external = os.environ.get("TEST_DATABASE_URL")
    if external:
        return external
    data_dir = Path(os.environ.get("SECRAG_TEST_DATA_DIR", REPO_ROOT / ".secrag" / "test")).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    return embedded.start(data_dir / "pgdata")


@pytest.fixture(scope="session")
def template_db(pg_server_url: str) -> Iterator[str]:
    """Name of a database with every migration applied, cloned by `db_url`."""
    name = f"secrag_tmpl_{os.getpid()}"
    _drop(pg_server_url, name)
    url = _create(pg_server_url, name)
    with database.connect(url, autocommit=True) as conn:
        database.check_requirements(conn)
        migrations.migrate(conn, SQL_DIR)
    yield name
    _drop(pg_server_url, name)


@pytest.fixture
def empty_db_url(pg_server_url: str) -> Iterator[str]:
    """A brand-new empty database (no migrations)."""
    name = f"secrag_t_{uuid.uuid4().hex[:12]}"
    url = _create(pg_server_url, name)
    yield url
    _drop(pg_server_url, name)


@pytest.fixture
def db_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    """A fresh, fully migrated database for one test."""
    name = f"secrag_t_{uuid.uuid4().hex[:12]}"
    url = _create(pg_server_url, name, template=template_db)
    yield url
    _drop(pg_server_url, name)


@pytest.fixture
def db(db_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to a fresh migrated database, pgvector registered."""
    from pgvector.psycopg import register_vector

    with database.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        yield conn
