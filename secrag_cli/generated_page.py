"""A checked-in page generated from the code (the API, command-line and sources references): printed, rewritten
(`--write`) or compared with what the code generates now (`--check`, which CI's tests run)."""

from __future__ import annotations

from pathlib import Path

import click


def emit(text: str, path: Path, *, write: bool, check: bool, what: str, command: str) -> None:
    """Print `text`, or write it to `path`, or fail when `path` differs from it (`what` names where the text
    comes from, `command` the command that rewrites the page)."""
    if not write and not check:
        click.echo(text, nl=False)
        return
    if check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            raise click.ClickException(f"{path} differs from {what}: run `{command} --write`")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    click.echo(f"wrote {path}")
