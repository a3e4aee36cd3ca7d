"""docs/reference/cli.md is generated from the command line's definitions: every command a section with its
usage and options, and the checked-in page equal to what the code generates."""

from __future__ import annotations

from click.testing import CliRunner

from secrag.settings import REPO_ROOT
from secrag_cli.cli_docs import DOCS_FILE, commands_page, leaves
from secrag_cli.main import cli


def test_the_command_line_reference_is_what_the_commands_generate() -> None:
    result = CliRunner().invoke(cli, ["commands", "--check", "--file", str(REPO_ROOT / DOCS_FILE)])
    assert result.exit_code == 0, result.output


def test_every_command_has_a_section_with_its_options() -> None:
    page = commands_page(cli)
    for path, command in leaves(cli):
        name = " ".join(("secrag", *path))
        assert f"### `{name}`" in page, name
        section = page.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for option in command.params:
            if option.name != "help" and option.param_type_name == "option":
                assert f"`{option.opts[0]}`" in section, f"{name} {option.opts[0]}"


def test_a_differing_page_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    stale = tmp_path / "cli.md"
    stale.write_text(commands_page(cli).replace("secrag db start", "secrag db begin"), encoding="utf-8")
    result = CliRunner().invoke(cli, ["commands", "--check", "--file", str(stale)])
    assert result.exit_code != 0 and "secrag commands --write" in result.output
