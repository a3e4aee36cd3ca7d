"""secrag_cli/generated_page.py: a generated page is printed, written, or checked against the code's text."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from secrag_cli.generated_page import emit


def test_write_then_check_passes_and_a_changed_page_fails_naming_the_command(tmp_path: Path) -> None:
    page = tmp_path / "reference" / "x.md"
    emit("# X\n", page, write=True, check=False, what="the code", command="secrag x")
    assert page.read_text(encoding="utf-8") == "# X\n"
    emit("# X\n", page, write=False, check=True, what="the code", command="secrag x")
    page.write_text("# edited by hand\n", encoding="utf-8")
    with pytest.raises(click.ClickException, match=r"differs from the code: run `secrag x --write`"):
        emit("# X\n", page, write=False, check=True, what="the code", command="secrag x")


def test_a_missing_page_fails_the_check(tmp_path: Path) -> None:
    with pytest.raises(click.ClickException):
        emit("# X\n", tmp_path / "absent.md", write=False, check=True, what="the code", command="secrag x")


def test_neither_flag_prints_the_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    emit("# X\n", tmp_path / "x.md", write=False, check=False, what="the code", command="secrag x")
    assert capsys.readouterr().out == "# X\n"
    assert not (tmp_path / "x.md").exists()
