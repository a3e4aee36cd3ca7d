"""Entry point of the `secrag` console script."""

from __future__ import annotations

import warnings

import click

from secrag import logs

from .backfill import backfill
from .cli_docs import commands
from .coverage import coverage
from .db import db
from .errors import SecragGroup
from .hooks import hooks
from .ingest import ingest
from .map import map_file
from .mcp import mcp
from .models import models
from .preflight import preflight
from .reference_docs import reference
from .run import run
from .serve import serve
from .settings_docs import settings
from .snapshot import snapshot
from .sources import sources
from .status import status
from .tune import tune


@click.group(cls=SecragGroup)
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
@click.option(
    "--log-format",
    type=click.Choice(logs.FORMATS),
    default="text",
    show_default=True,
    envvar="SECRAG_LOG_FORMAT",
    help="text, or one JSON object per line keeping every structured field (also for the API's "
    "workers and the Dagster processes `secrag run` starts).",
)
@click.version_option(package_name="secrag")
@click.pass_context
def cli(ctx: click.Context, verbose: bool, log_format: logs.LogFormat) -> None:
    """secrag: security knowledge, fresh and searchable, in PostgreSQL + pgvector."""
    logs.configure(log_format, "DEBUG" if verbose else "INFO")
    warnings.filterwarnings("ignore", module="platformdirs")
    ctx.obj = {"log_format": log_format}


cli.add_command(backfill)
cli.add_command(commands)
cli.add_command(coverage)
cli.add_command(db)
cli.add_command(hooks)
cli.add_command(ingest)
cli.add_command(map_file)
cli.add_command(mcp)
cli.add_command(models)
cli.add_command(preflight)
cli.add_command(reference)
cli.add_command(run)
cli.add_command(serve)
cli.add_command(settings)
cli.add_command(snapshot)
cli.add_command(sources)
cli.add_command(status)
cli.add_command(tune)


if __name__ == "__main__":
    cli()
