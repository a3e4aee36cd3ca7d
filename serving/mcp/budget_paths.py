"""Paths into a JSON answer (`results[].snippet`, `techniques[].*.top`) and the sizes of its strings as compact
JSON, cut or whole, without serialising them again (serving/mcp/budget.py's arithmetic)."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from serving.contract.limits import compact_json

ELLIPSIS = "…"
# What json.dumps(ensure_ascii=False) escapes: a quote, a backslash and the control characters.
_ESCAPED = re.compile(r'["\\\x00-\x1f]')
_SHORT_ESCAPES = frozenset('"\\\n\r\t\b\f')


compact = compact_json  # the text an MCP client reads, whose characters a budget counts


def cut(text: str, cap: int) -> str:
    return text[:cap] + ELLIPSIS


@dataclass(frozen=True)
class Text:
    """A string of the answer, measured once: its compact JSON size whole, and cut at any cap by arithmetic."""

    value: str
    whole: int  # len(compact(value))
    escapes: tuple[int, ...] = ()  # positions of the characters JSON escapes
    extra: tuple[int, ...] = (0,)  # extra[i]: the characters the first i escapes add

    @classmethod
    def of(cls, value: str) -> Text:
        whole = len(compact(value))
        if whole == len(value) + 2:  # nothing escaped: the common case, no scan
            return cls(value, whole)
        found = [(m.start(), 1 if m.group() in _SHORT_ESCAPES else 5) for m in _ESCAPED.finditer(value)]
        return cls(value, whole, tuple(p for p, _ in found), (0, *accumulate(n for _, n in found)))

    def cut_at(self, cap: int) -> bool:
        return len(self.value) > cap + len(ELLIPSIS)

    def size_at(self, cap: int | None) -> int:
        """Its size as compact JSON when capped at `cap` characters (None: whole)."""
        if cap is None or not self.cut_at(cap):
            return self.whole
        return cap + len(ELLIPSIS) + 2 + self.extra[bisect_left(self.escapes, cap)]


def segments(path: str) -> list[str]:
    out: list[str] = []
    for part in path.split("."):
        key, lists = part, 0
        while key.endswith("[]"):
            key, lists = key[:-2], lists + 1
        if key:
            out.append(key)
        out.extend(["[]"] * lists)
    return out


def nodes(node: Any, path: list[str]) -> Iterator[Any]:  # noqa: ANN401
    """The values at the path."""
    if not path:
        yield node
        return
    head, rest = path[0], path[1:]
    if head == "[]" and isinstance(node, list):
        for item in node:
            yield from nodes(item, rest)
    elif head == "*" and isinstance(node, dict):
        for value in node.values():
            yield from nodes(value, rest)
    elif isinstance(node, dict) and head in node:
        yield from nodes(node[head], rest)


def slots(node: Any, path: list[str]) -> Iterator[tuple[Any, Any]]:  # noqa: ANN401
    """(container, key) of each value at the path, so it can be replaced."""
    *parents, last = path
    for parent in list(nodes(node, parents)):
        if last == "[]" and isinstance(parent, list):
            yield from ((parent, i) for i in range(len(parent)))
        elif last == "*" and isinstance(parent, dict):
            yield from ((parent, k) for k in list(parent))
        elif isinstance(parent, dict) and last in parent:
            yield parent, last


def every_slot(node: Any) -> Iterator[tuple[Any, Any]]:  # noqa: ANN401
    """(container, key) of every value in the tree, containers before their contents."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in list(items):
        yield node, key
        if isinstance(value, dict | list):
            yield from every_slot(value)
