"""STIX field values as text: citations dropped, CAPEC markup flattened, empty sections left out."""

from __future__ import annotations

import pytest

from pipeline.sources.parsers.stix.text import clean, compact, section


@pytest.mark.parametrize(
    ("raw", "markup", "expected"),
    [
        (None, False, ""),
        ("Dumps <code>lsass</code> memory.(Citation: X 2020) ", False, "Dumps `lsass` memory."),
        ("Use <placeholder> here", False, "Use <placeholder> here"),
        ("<p>One &amp; two</p><p>Three</p>", True, "One & two\nThree"),
        ("<ul><li>a  b</li><li>c</li></ul>", True, "a b\nc"),
    ],
)
def test_clean(raw: object, markup: bool, expected: str) -> None:
    assert clean(raw, markup) == expected


def test_section_shapes() -> None:
    assert section("Tactics", "") == ""
    assert section("Tactics", "execution") == "Tactics: execution"
    assert section("Methods", ["B1 x", "", "B2 y"]) == "Methods:\n- B1 x\n- B2 y"
    assert section("Methods", []) == ""
    assert section("Consequences", {"Scope": ["Integrity", "Availability"]}) == (
        "Consequences:\n- Scope: Integrity, Availability"
    )


def test_compact_drops_empty_values_only() -> None:
    assert compact({"a": None, "b": "", "c": [], "d": {}, "e": 0, "f": False, "g": "x"}) == {
        "e": 0,
        "f": False,
        "g": "x",
    }
