"""docs/reference/sources.md is generated from the source registry and the asset groups: every source a row with
the kind its shape check reads, every group described, and the checked-in page equal to what the code generates."""

from __future__ import annotations

from click.testing import CliRunner

from pipeline.assets.groups import ASSET_GROUPS
from pipeline.sources.registry import default_registry
from secrag.settings import REPO_ROOT
from secrag_cli.main import cli
from secrag_cli.sources_docs import DOCS_FILE, sources_page


def test_the_sources_reference_is_what_the_registry_generates() -> None:
    result = CliRunner().invoke(cli, ["sources", "docs", "--check", "--file", str(REPO_ROOT / DOCS_FILE)])
    assert result.exit_code == 0, result.output


def test_every_source_is_a_row_with_the_kind_its_shape_check_reads() -> None:
    registry = default_registry()
    rows = [line for line in sources_page(registry.values()).splitlines() if line.startswith("| `")]
    listed = {row.split("`")[1]: row for row in rows if row.split("`")[1] in registry}
    assert set(listed) == set(registry)
    for name, spec in registry.items():
        kind = spec.shape.kind if spec.shape is not None else "none"
        assert f"| `{kind}` |" in listed[name], name


def test_every_asset_group_is_described() -> None:
    page = sources_page(default_registry().values())
    assert all(f"| `{group}` | {text} |" in page for group, text in ASSET_GROUPS.items())
