"""YAML limits: bombs, depth, size, bad syntax."""

from __future__ import annotations

import pytest

from pipeline.sources import safe_yaml
from secrag.errors import ParseError


def test_multi_document_files() -> None:
    assert safe_yaml.load_all("a: 1\n---\nb: 2\n---\n") == [{"a": 1}, {"b": 2}]


def test_billion_laughs_is_refused() -> None:
    bomb = 'a: &a ["lol","lol"]\nb: &b [*a,*a,*a]\nc: &c [*b,*b,*b]\n' + "".join(
        f"x{i}: &x{i} [*c,*c,*c]\n" for i in range(60)
    )
    with pytest.raises(ParseError, match="aliases"):
        safe_yaml.load(bomb)


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(ParseError, match="deeper"):
        safe_yaml.load("[" * 200 + "]" * 200)


def test_oversized_input_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_yaml, "MAX_BYTES", 100)
    with pytest.raises(ParseError, match="limit"):
        safe_yaml.load("a: " + "x" * 200)


def test_python_tags_are_refused() -> None:
    with pytest.raises(ParseError, match="invalid YAML"):
        safe_yaml.load("!!python/object/apply:os.system ['true']")


def test_syntax_errors_name_the_line() -> None:
    with pytest.raises(ParseError, match="line 2"):
        safe_yaml.load("a: 1\n  b: [\n")
