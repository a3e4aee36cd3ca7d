"""Numbered SQL migrations: ordered, checksummed, one transaction each, under an advisory lock."""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from secrag.db import reader_grants
from secrag.db.queries import Queries
from secrag.errors import MigrationError

log = logging.getLogger(__name__)

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
NO_TRANSACTION = "-- secrag:no-transaction"
LOCK_KEY = 0x5EC7A6  # advisory lock shared by every process that migrates


@dataclass(frozen=True)
class Migration:
    """One migration file."""

    version: int
    name: str
    sql: str
    checksum: str
    transactional: bool


def load_migrations(directory: Path) -> list[Migration]:
    """Every `NNNN_name.sql` in the directory, ordered; gaps and duplicates are errors."""
    migrations = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILE.match(path.name)
        if not match:
            raise MigrationError(f"migration file {path.name} is not named NNNN_name.sql")
        text = path.read_text(encoding="utf-8")
        migrations.append(
            Migration(
                version=int(match.group(1)),
                name=match.group(2),
                sql=text,
                checksum=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                transactional=not text.lstrip().startswith(NO_TRANSACTION),
            )
        )
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            raise MigrationError(
                f"migrations must be numbered 0001, 0002, ... without gaps; "
                f"found {migration.version:04d}_{migration.name}.sql at position {expected}"
            )
    return migrations


def _statements(text: str) -> list[str]:
    """Split a no-transaction migration into statements (they must not contain `;` inside)."""
    body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


def pending(conn: psycopg.Connection, sql_dir: Path) -> list[Migration]:
    """Migrations not yet applied (after verifying the applied ones were not edited)."""
    q = Queries(sql_dir, "migrations")
    migrations = load_migrations(sql_dir / "migrations")
    exists = conn.execute(q.table_exists).fetchone()
    applied = {v: (n, c) for v, n, c in conn.execute(q.applied).fetchall()} if exists and exists[0] else {}
    known = {m.version: m for m in migrations}
    for version, (name, checksum) in applied.items():
        migration = known.get(version)
        if migration is None:
            raise MigrationError(
                f"database has migration {version:04d}_{name} that this secrag does not know",
                hint="upgrade secrag; the database is newer than the code",
            )
        if migration.checksum != checksum:
            raise MigrationError(
                f"migration {version:04d}_{name}.sql was edited after it was applied",
                hint="never edit an applied migration; add a new NNNN_*.sql instead",
            )
    return [m for m in migrations if m.version not in applied]


def migrate(conn: psycopg.Connection, sql_dir: Path) -> list[Migration]:
    """Apply pending migrations; `conn` must be in autocommit mode. Returns what was applied."""
    if not conn.autocommit:
        raise MigrationError("migrate() needs an autocommit connection")
    q = Queries(sql_dir, "migrations")
    conn.execute(q.lock, {"key": LOCK_KEY})
    applying: list[Migration] = []
    notices = _notice_logger(applying)
    conn.add_notice_handler(notices)
    try:
        conn.execute(q.create_table)
        todo = pending(conn, sql_dir)
        for migration in todo:
            started = time.monotonic()
            applying[:] = [migration]
            log.info("applying migration %04d_%s", migration.version, migration.name)
            try:
                if migration.transactional:
                    with conn.transaction():
                        conn.execute(migration.sql)
                        _record(conn, q, migration, started)
                else:
                    for statement in _statements(migration.sql):
                        conn.execute(statement)
                    _record(conn, q, migration, started)
            except psycopg.Error as exc:
                raise MigrationError(
                    f"migration {migration.version:04d}_{migration.name}.sql failed: {str(exc).strip().splitlines()[0]}"
                ) from exc
        applying.clear()
        # Every run, not only when something was applied: a right granted by hand is taken back too.
        if current_version(conn, sql_dir) >= reader_grants.SINCE_VERSION:
            try:
                reader_grants.apply(conn, sql_dir)
            except psycopg.Error as exc:
                raise MigrationError(f"{reader_grants.GRANTS_FILE} failed: {str(exc).strip().splitlines()[0]}") from exc
        return todo
    finally:
        conn.remove_notice_handler(notices)
        conn.execute(q.unlock, {"key": LOCK_KEY})


def _notice_logger(applying: list[Migration]) -> Callable[[psycopg.errors.Diagnostic], None]:
    """What a migration says with RAISE WARNING (a row it refused, migration 0024) reaches the log, one line
    each; the server's own NOTICEs (an object that already exists) only at debug level."""

    def handle(diagnostic: psycopg.errors.Diagnostic) -> None:
        name = f"{applying[0].version:04d}_{applying[0].name}" if applying else "migrations"
        level = logging.WARNING if diagnostic.severity_nonlocalized == "WARNING" else logging.DEBUG
        log.log(level, diagnostic.message_primary, extra={"migration": name})  # the name: a field of the line

    return handle


def _record(conn: psycopg.Connection, q: Queries, migration: Migration, started: float) -> None:
    conn.execute(
        q.record,
        {
            "version": migration.version,
            "name": migration.name,
            "checksum": migration.checksum,
            "execution_ms": int((time.monotonic() - started) * 1000),
        },
    )


def latest_version(sql_dir: Path) -> int:
    """The migration this release brings its schema to (the highest shipped; 0 when none)."""
    return max((m.version for m in load_migrations(sql_dir / "migrations")), default=0)


def current_version(conn: psycopg.Connection, sql_dir: Path) -> int:
    """Highest applied migration, 0 on an empty database."""
    q = Queries(sql_dir, "migrations")
    exists = conn.execute(q.table_exists).fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute(q.current_version).fetchone()
    return int(row[0]) if row else 0
