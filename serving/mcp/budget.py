"""Fit a tool's JSON answer into a response budget in characters: the most useful fields first, the cuts said.

The budget counts the characters (code points) of the answer as compact JSON, the text an MCP client
reads. A tool's Priority lists, as data, what goes first when the answer is over budget: fields left
out whole (`omit`), text fields shortened (`shorten`, never below TEXT_FLOOR before the fallback) and
lists or maps trimmed from the end (`trim`), in that tool's order. After the first step that makes
the answer fit, the trimmed lists and shortened texts get back whatever room a later step freed, the
last cut first. An answer still over budget
then has every string shortened and, last, its top-level fields left out from the end. What was cut is
said under NOTE_KEY; an answer within its budget is returned untouched.

Paths name fields by key, `[]` for every item of a list and `*` for every value of a map:
`results[].snippet`, `techniques[].*.top`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

MIN_CHARS = 1000  # room for an answer's skeleton, its note and a first item or two
MAX_CHARS = 1_000_000
TEXT_FLOOR = 40  # a declared text field keeps at least this many characters before the fallback
ELLIPSIS = "…"
NOTE_KEY = "budget"  # not `truncated`: several answers already carry a `truncated` flag of their own
_NOTE_ENTRIES = 8  # a note names at most this many paths per kind of cut

Action = Literal["omit", "shorten", "trim"]


@dataclass(frozen=True)
class Step:
    action: Action
    path: str


def omit(path: str) -> Step:
    """Leave the field out whole (a map key; bulky extras such as a Navigator layer)."""
    return Step("omit", path)


def shorten(path: str) -> Step:
    """Shorten the strings at path."""
    return Step("shorten", path)


def trim(path: str) -> Step:
    """Keep the first items of the lists (or the first entries of the maps) at path."""
    return Step("trim", path)


@dataclass(frozen=True)
class Priority:
    """What a tool gives up first when its answer is over budget, in order."""

    steps: tuple[Step, ...] = ()


def size(value: Any) -> int:  # noqa: ANN401 - any JSON value
    """The answer's length in characters as compact JSON (what the budget counts)."""
    return len(compact(value))


def compact(value: Any) -> str:  # noqa: ANN401 - any JSON value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass
class _Cuts:
    omitted: list[str] = field(default_factory=list)
    caps: dict[str, int] = field(default_factory=dict)
    trims: dict[str, int] = field(default_factory=dict)
    every_text: int | None = None  # the fallback's cap on every string
    dropped_keys: int = 0  # the fallback's top-level fields left out, from the end

    def but(self, **changes: Any) -> _Cuts:  # noqa: ANN401
        values = {
            "omitted": list(self.omitted),
            "caps": dict(self.caps),
            "trims": dict(self.trims),
            "every_text": self.every_text,
            "dropped_keys": self.dropped_keys,
        }
        return _Cuts(**(values | changes))


def fit(answer: dict[str, Any], max_chars: int, priority: Priority) -> dict[str, Any]:
    """The answer within max_chars characters of compact JSON, what was cut said under NOTE_KEY."""
    if size(answer) <= max_chars:
        return answer
    cuts = _Cuts()
    for step in priority.steps:
        if step.action == "omit":
            cuts = cuts.but(omitted=[*cuts.omitted, step.path])
        else:
            floor = TEXT_FLOOR if step.action == "shorten" else 0
            cuts = _with(cuts, step, _most(answer, max_chars, cuts, step, floor) or floor)
        if _fits(answer, cuts, max_chars):
            break
    for step in reversed(priority.steps):  # give back the room later steps freed, to the last cut first
        current = cuts.caps.get(step.path) if step.action == "shorten" else cuts.trims.get(step.path)
        if step.action != "omit" and current is not None:
            cuts = _with(cuts, step, _most(answer, max_chars, cuts, step, current) or current)
    if not _fits(answer, cuts, max_chars):
        longest = max((len(s) for s in _strings(answer)), default=0)
        cuts.every_text = _largest(0, longest, partial(_fits_every_text, answer, cuts, max_chars)) or 0
    while not _fits(answer, cuts, max_chars) and cuts.dropped_keys < len(answer):
        cuts.dropped_keys += 1
    fitted = _render(answer, cuts, max_chars)
    if size(fitted) > max_chars:  # only a note naming many paths can still be over: say less
        fitted = {NOTE_KEY: {"max_chars": max_chars, "omitted": ["*"]}}
    return fitted


def _fits(answer: dict[str, Any], cuts: _Cuts, max_chars: int) -> bool:
    return size(_render(answer, cuts, max_chars)) <= max_chars


def _fits_every_text(answer: dict[str, Any], cuts: _Cuts, max_chars: int, cap: int) -> bool:
    return _fits(answer, cuts.but(every_text=cap), max_chars)


def _with(cuts: _Cuts, step: Step, value: int) -> _Cuts:
    if step.action == "shorten":
        return cuts.but(caps={**cuts.caps, step.path: value})
    return cuts.but(trims={**cuts.trims, step.path: value})


def _most(answer: dict[str, Any], max_chars: int, cuts: _Cuts, step: Step, lo: int) -> int | None:
    """The largest value from lo of a shorten (characters) or trim (items) step with which the answer fits."""
    longest = _longest_text(answer, step.path) if step.action == "shorten" else _longest_list(answer, step.path)

    def ok(value: int) -> bool:
        return _fits(answer, _with(cuts, step, value), max_chars)

    return _largest(lo, longest, ok)


def _render(answer: dict[str, Any], cuts: _Cuts, max_chars: int) -> dict[str, Any]:
    """The answer with the cuts applied, and its note."""
    out: dict[str, Any] = json.loads(compact(answer))  # a deep copy
    note: dict[str, Any] = {"max_chars": max_chars}
    omitted = [p for p in cuts.omitted if _remove(out, _segments(p))]
    dropped = {p: n for p, keep in cuts.trims.items() if (n := _keep(out, _segments(p), keep))}
    shortened = {p: cap for p, cap in cuts.caps.items() if _cap(out, _segments(p), cap)}
    if cuts.every_text is not None and _cap_everywhere(out, cuts.every_text):
        shortened["*"] = cuts.every_text
    if cuts.dropped_keys:
        gone = list(out)[max(0, len(out) - cuts.dropped_keys) :]
        omitted += gone
        for key in gone:
            del out[key]
    if dropped:
        note["dropped"] = dict(list(dropped.items())[:_NOTE_ENTRIES])
    if shortened:
        note["shortened"] = dict(list(shortened.items())[:_NOTE_ENTRIES])
    if omitted:
        note["omitted"] = omitted[:_NOTE_ENTRIES]
    out[NOTE_KEY] = note
    return out


def _largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """The largest x in [lo, hi] with ok(x), ok being monotone (true up to some x); None when ok(lo) fails."""
    if hi < lo or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


# --- paths ------------------------------------------------------------------------------------


def _segments(path: str) -> list[str]:
    out: list[str] = []
    for part in path.split("."):
        key, lists = part, 0
        while key.endswith("[]"):
            key, lists = key[:-2], lists + 1
        if key:
            out.append(key)
        out.extend(["[]"] * lists)
    return out


def _nodes(node: Any, segments: list[str]) -> Iterator[Any]:  # noqa: ANN401
    """The values at the path."""
    if not segments:
        yield node
        return
    head, rest = segments[0], segments[1:]
    if head == "[]" and isinstance(node, list):
        for item in node:
            yield from _nodes(item, rest)
    elif head == "*" and isinstance(node, dict):
        for value in node.values():
            yield from _nodes(value, rest)
    elif isinstance(node, dict) and head in node:
        yield from _nodes(node[head], rest)


def _slots(node: Any, segments: list[str]) -> Iterator[tuple[Any, Any]]:  # noqa: ANN401
    """(container, key) of each value at the path, so it can be replaced."""
    *parents, last = segments
    for parent in list(_nodes(node, parents)):
        if last == "[]" and isinstance(parent, list):
            yield from ((parent, i) for i in range(len(parent)))
        elif last == "*" and isinstance(parent, dict):
            yield from ((parent, k) for k in list(parent))
        elif isinstance(parent, dict) and last in parent:
            yield parent, last


def _remove(node: Any, segments: list[str]) -> bool:  # noqa: ANN401
    found = [(c, k) for c, k in _slots(node, segments) if isinstance(c, dict)]
    for container, key in found:
        del container[key]
    return bool(found)


def _keep(node: Any, segments: list[str], keep: int) -> int:  # noqa: ANN401
    """Keep the first `keep` items of each list (or entries of each map) at the path; how many went."""
    dropped = 0
    for value in list(_nodes(node, segments)):
        if isinstance(value, list) and len(value) > keep:
            dropped += len(value) - keep
            del value[keep:]
        elif isinstance(value, dict) and len(value) > keep:
            for key in list(value)[keep:]:
                del value[key]
                dropped += 1
    return dropped


def _cut(text: str, cap: int) -> str:
    return text[:cap] + ELLIPSIS


def _cap(node: Any, segments: list[str], cap: int) -> bool:  # noqa: ANN401
    cut = False
    for container, key in _slots(node, segments):
        value = container[key]
        if isinstance(value, str) and len(value) > cap + len(ELLIPSIS):
            container[key], cut = _cut(value, cap), True
    return cut


def _cap_everywhere(node: Any, cap: int) -> bool:  # noqa: ANN401
    cut = False
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in list(items):
        if isinstance(value, str) and len(value) > cap + len(ELLIPSIS):
            node[key], cut = _cut(value, cap), True
        elif isinstance(value, dict | list):
            cut = _cap_everywhere(value, cap) or cut
    return cut


def _strings(node: Any) -> Iterator[str]:  # noqa: ANN401
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _longest_text(answer: dict[str, Any], path: str) -> int:
    return max((len(v) for c, k in _slots(answer, _segments(path)) if isinstance(v := c[k], str)), default=0)


def _longest_list(answer: dict[str, Any], path: str) -> int:
    return max((len(v) for v in _nodes(answer, _segments(path)) if isinstance(v, list | dict)), default=0)
