"""Bounded inputs are 422s: the cursor within bigint, and the schema's idea of blank the server's (issue 43)."""

from __future__ import annotations

import re
import sys

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from serving.contract.changes import CURSOR_PATTERN, MAX_CURSOR, ChangesQuery, decimal_pattern
from serving.contract.requests import BLANK, QUERY_PATTERN, SearchRequest, not_blank


@pytest.mark.parametrize("maximum", [1, 7, 9, 10, 99, 100, 101, 209, 1000, 4096, 90210])
def test_decimal_pattern_takes_exactly_one_to_its_maximum(maximum: int) -> None:
    pattern = re.compile(decimal_pattern(maximum))
    assert [n for n in range(0, 3 * maximum + 20) if pattern.fullmatch(str(n))] == list(range(1, maximum + 1))
    assert not pattern.fullmatch(f"0{maximum}") and not pattern.fullmatch(f"+{maximum}")


@given(st.integers(1, 10**20))
def test_the_cursor_pattern_stops_at_bigint(number: int) -> None:
    assert bool(re.fullmatch(CURSOR_PATTERN, str(number))) == (number <= 2**63 - 1)


@pytest.mark.parametrize("cursor", ["9999999999999999999", str(MAX_CURSOR + 1), "0", "01", "-1", "1e3", ""])
def test_a_cursor_past_bigint_is_refused(cursor: str) -> None:
    with pytest.raises(ValidationError):
        ChangesQuery(cursor=cursor)


def test_the_largest_cursor_is_taken() -> None:
    assert ChangesQuery(cursor=str(MAX_CURSOR)).cursor == "9223372036854775807"


def test_blank_is_what_python_reads_as_space() -> None:
    blank = re.compile(f"[{BLANK}]")
    assert [c for c in range(sys.maxunicode + 1) if blank.match(chr(c))] == [
        c for c in range(sys.maxunicode + 1) if chr(c).isspace()
    ]


SCHEMA = jsonschema_rs.validator_for({"type": "string", "pattern": QUERY_PATTERN})
# The characters JSON Schema's `\s` (ECMA-262) and Python's disagree on, and NUL.
EDGES = st.sampled_from(["\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\ufeff", "\u00a0", "\u3000", " ", "\t", "\x00", "a"])


@given(st.text(EDGES, min_size=1, max_size=6) | st.text(min_size=1, max_size=6))
def test_the_schema_pattern_and_the_server_agree_on_blank(text: str) -> None:
    """A text the schema's pattern accepts (as JSON Schema reads it: ECMA-262, here by the validator schemathesis
    uses) is accepted by the model, and one it refuses is refused (a 422 `text must not be blank` for a text the
    schema allows failed the contract test)."""
    in_schema = SCHEMA.is_valid(text)
    try:
        not_blank(text, "query")
        SearchRequest(query=text)
    except (ValueError, ValidationError):
        accepted = False
    else:
        accepted = True
    assert accepted == in_schema
