"""JSON loading with size and nesting limits (deep nesting is a ParseError, never a RecursionError)."""

from __future__ import annotations

import json
from typing import Any

from secrag.errors import ParseError

MAX_DEPTH = 256


def _depth(text: str) -> int:
    """The deepest bracket nesting outside strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def load(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:  # noqa: ANN401
    """One JSON document; ParseError for invalid JSON or nesting deeper than max_depth."""
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig")
    deepest = _depth(text)
    if deepest > max_depth:
        raise ParseError(f"JSON nests {deepest} levels deep; the limit is {max_depth}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"invalid JSON: {exc}") from exc
