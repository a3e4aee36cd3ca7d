"""`secrag reference`: docs/reference/api.md, the REST and MCP reference generated from the API's code.

The page is serving/api/reference.py's whole output; `--write` rewrites it, `--check` fails when the checked-in
page differs (tests/unit/serving/test_api_reference.py runs the check).
"""

from __future__ import annotations

from pathlib import Path

import click

from secrag_cli.generated_page import emit

REFERENCE_FILE = Path("docs") / "reference" / "api.md"


@click.command("reference")
@click.option("--write", "write", is_flag=True, help=f"Rewrite {REFERENCE_FILE}.")
@click.option("--check", "check", is_flag=True, help=f"Fail when {REFERENCE_FILE} differs from the code.")
@click.option("--file", "path", type=click.Path(path_type=Path), default=REFERENCE_FILE, show_default=True)
def reference(write: bool, check: bool, path: Path) -> None:
    """Print the API reference (markdown), or write or check the checked-in page."""
    from serving.api.reference import reference_text

    text = reference_text()
    emit(text, path, write=write, check=check, what="the API's code", command="secrag reference")
