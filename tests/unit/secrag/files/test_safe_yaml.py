"""YAML limits: bombs, depth, size, bad syntax."""

from __future__ import annotations

import pytest

from secrag.errors import ParseError
from secrag.files import safe_yaml


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


@pytest.fixture(params=["c", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each limit test on the C path (libyaml's events) and on the pure-Python fallback."""
    if request.param == "python":
        monkeypatch.setattr(safe_yaml, "_C_LOADER", None)
    return str(request.param)


def test_libyaml_is_the_path_taken() -> None:
    assert safe_yaml._C_LOADER is not None  # PyYAML's wheels ship libyaml: a missing one is a packaging bug


def test_every_limit_holds_on_both_paths(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = 'a: &a ["lol","lol"]\nb: &b [*a,*a,*a]\nc: &c [*b,*b,*b]\n' + "".join(
        f"x{i}: &x{i} [*c,*c,*c]\n" for i in range(60)
    )
    with pytest.raises(ParseError, match="aliases"):
        safe_yaml.load(bomb)
    with pytest.raises(ParseError, match="deeper"):
        safe_yaml.load("[" * 200 + "]" * 200)
    with pytest.raises(ParseError, match="invalid YAML"):
        safe_yaml.load("!!python/object/apply:os.system ['true']")
    with pytest.raises(ParseError, match="line 2"):
        safe_yaml.load("a: 1\n  b: [\n")
    monkeypatch.setattr(safe_yaml, "MAX_NODES", 50)
    with pytest.raises(ParseError, match="nodes"):
        safe_yaml.load("[" + ", ".join(str(i) for i in range(100)) + "]")
    assert safe_yaml.load_all("a: [1, 2]\n---\n---\nb: {c: 2020-01-01}\n") == [
        {"a": [1, 2]},
        {"b": {"c": __import__("datetime").date(2020, 1, 1)}},
    ]


def test_a_file_libyaml_refuses_but_pyyaml_reads_is_still_read() -> None:
    """ForensicArtifacts' unix_common.yaml: libyaml stops at a ':' that PyYAML's scanner accepts."""
    from tests.plugins.upstream import SNAPSHOT

    text = (SNAPSHOT / "forensic_artifacts" / "artifacts" / "data" / "unix_common.yaml").read_bytes()
    docs = safe_yaml.load_all(text)
    assert docs and docs[0]["name"] == "CupsJobCacheFile"
