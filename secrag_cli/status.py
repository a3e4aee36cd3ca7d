"""`secrag status`: a summary of the store."""

from __future__ import annotations

import click

from secrag.db import database, migrations
from secrag.db.queries import Queries, one_row
from secrag.settings import get_settings


@click.command()
def status() -> None:
    """Summarise the store: database, schema, sources, documents, chunks, embeddings."""
    settings = get_settings()
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        version = migrations.current_version(conn, settings.sql_dir)
        click.echo(
            f"database   {database.describe(url)} (PostgreSQL {conn.info.server_version // 10000}, "
            f"schema version {version})"
        )
        if version == 0:
            click.echo("schema     not migrated: run `secrag db migrate`")
            return
        q = Queries(settings.sql_dir, "status")
        sources, documents, chunks, vectors, model = one_row(conn.execute(q.totals))
        click.echo(
            f"sources    {sources}\ndocuments  {documents}\nchunks     {chunks}\n"
            f"embeddings {vectors} (active model {model})"
        )
        rows = conn.execute(q.sources).fetchall()
        width = max([len("source"), *(len(row[0]) for row in rows)])  # the longest name sets the column
        if rows:
            click.echo(f"\n{'source':<{width}} {'state':<9} {'records':>8}  {'version':<14} last sync")
        for name, _kind, state, current, records, synced, error in rows:
            line = (
                f"{name:<{width}} {state:<9} {records:>8}  {(current or '-')[:14]:<14} {synced:%Y-%m-%d %H:%M}"
                if synced
                else f"{name:<{width}} {state:<9} {records:>8}  {(current or '-')[:14]:<14} never"
            )
            click.echo(line + (f"  error: {error[:80]}" if error else ""))
