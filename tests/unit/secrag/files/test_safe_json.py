"""The hardened JSON reader: nesting limits are ParseErrors, never RecursionErrors."""

from __future__ import annotations

import pytest

from secrag.errors import ParseError
from secrag.files import safe_json


def test_plain_documents_load() -> None:
    assert safe_json.load(b'\xef\xbb\xbf{"a": ["[", "\\"]"]}') == {"a": ["[", '"]']}


@pytest.mark.parametrize("depth", [257, 100_000])
def test_deep_nesting_is_refused_before_parsing(depth: int) -> None:
    with pytest.raises(ParseError, match=f"nests {depth} levels deep"):
        safe_json.load("[" * depth + "]" * depth)


def test_invalid_json_names_the_problem() -> None:
    with pytest.raises(ParseError, match="invalid JSON"):
        safe_json.load("{nope")
