"""`secrag preflight ROLE -- COMMAND...`: check what a Dagster role needs, then become COMMAND.

Dagster's own processes (code server, webserver, daemon) meet a missing secret, an unreachable
database or an unmigrated store with a long traceback, after retrying for a while. In the deployment
files each of them starts through this command instead: it checks the role's databases in a few
seconds, prints one line and exits 1 when something is wrong, and otherwise replaces itself with the
Dagster command (exec), so signals and the exit status are Dagster's own.

- every Dagster role: SECRAG_DAGSTER_PG_URL is set and its database answers (the instance storage of
  deploy/dagster.yaml);
- the code server (it runs the pipeline): the secrag database answers and is at the migration this
  release expects (`secrag db migrate` otherwise).
"""

from __future__ import annotations

import os
import shutil

import click

from secrag.db import database, migrations
from secrag.errors import ConfigError, DatabaseError
from secrag.settings import get_settings

ROLES = ("code-server", "webserver", "daemon")
INSTANCE_URL = "SECRAG_DAGSTER_PG_URL"


def check_instance(timeout: int) -> str:
    url = os.environ.get(INSTANCE_URL, "").strip()
    if not url:
        raise ConfigError(
            f"{INSTANCE_URL} is not set", hint="the Dagster instance (deploy/dagster.yaml) keeps its storage there"
        )
    try:
        with database.connect(url, timeout=timeout, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except DatabaseError as exc:
        hint = exc.hint.replace(", or unset it to use the embedded server", "").replace("DATABASE_URL", INSTANCE_URL)
        raise DatabaseError(f"Dagster instance database ({INSTANCE_URL}): {exc}", hint=hint) from exc
    return database.describe(url)


def check_store(timeout: int) -> str:
    settings = get_settings()
    if not settings.database_url:
        raise ConfigError("DATABASE_URL is not set", hint="the code server writes the store there")
    with database.connect(settings.database_url, timeout=timeout, autocommit=True) as conn:
        version = migrations.current_version(conn, settings.sql_dir)
        expected = migrations.latest_version(settings.sql_dir)
    if version != expected:
        newer = version > expected
        raise DatabaseError(
            f"the secrag database at {database.describe(settings.database_url)} is at migration {version}, "
            f"this release {'knows only up to' if newer else 'needs'} {expected}",
            hint="deploy the release that migrated it (or a newer one)"
            if newer
            else "run `secrag db migrate` (the migrate service or job) first",
        )
    return database.describe(settings.database_url)


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("role", type=click.Choice(ROLES))
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.pass_context
def preflight(ctx: click.Context, role: str, command: tuple[str, ...]) -> None:
    """Check the databases ROLE needs, then exec COMMAND (one line and exit 1 when one is missing)."""
    if command[:1] == ("--",):  # click keeps the separator once the role has ended the options
        command = command[1:]
    if not command:
        raise click.UsageError("no COMMAND after the role: secrag preflight ROLE -- COMMAND...")
    if command == ("--help",):  # `secrag preflight ROLE --help`: COMMAND takes every later argument
        click.echo(ctx.get_help())
        ctx.exit(0)
    timeout = get_settings().connect_timeout
    checked = [f"instance {check_instance(timeout)}"]
    if role == "code-server":
        checked.append(f"store {check_store(timeout)}")
    program = shutil.which(command[0])
    if program is None:
        raise ConfigError(f"{command[0]} is not installed", hint="the image's entry points run each role")
    click.echo(f"preflight {role}: {', '.join(checked)} ok; starting {command[0]}", err=True)
    os.execv(program, list(command))
