"""Turn secrag errors into one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import sys
from typing import Any

import click

from secrag.errors import SecragError


class SecragGroup(click.Group):
    """A click group that prints SecragError as `error: ...` and exits 1."""

    def invoke(self, ctx: click.Context) -> Any:  # noqa: ANN401
        try:
            return super().invoke(ctx)
        except SecragError as exc:
            click.echo(f"error: {exc.one_line()}", err=True)
            sys.exit(1)
