"""`secrag run`: the main job of `make run` (database up, migrated, status)."""
from __future__ import annotations

import time

import click

from secrag import database, migrations
from secrag.settings import get_settings


def prepare_database() -> str:
    """Start (or reach) the database, check it, apply migrations; returns its URL."""
    settings = get_settings()
    started = time.monotonic()
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        database.check_requirements(conn)
        applied = migrations.migrate(conn, settings.sql_dir)
        version = migrations.current_version(conn)
    click.echo(f"database ready at {database.describe(url)} in {time.monotonic() - started:.1f}s "
               f"(schema version {version}, {len(applied)} migrations applied)")
    return url


@click.command()
@click.pass_context
def run(ctx: click.Context) -> None:
    """Set up the store and run the main job."""
    prepare_database()
    from .main import status

    ctx.invoke(status)
