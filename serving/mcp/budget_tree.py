"""An answer being fitted to its budget (serving/mcp/budget.py): one copy of it, its size as compact JSON kept
by arithmetic as fields go, texts are cut and lists trimmed, and the note that says so."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from serving.mcp.budget_paths import Text, compact, cut, every_slot, nodes, segments, slots

NOTE_KEY = "budget"  # not `truncated`: several answers already carry a `truncated` flag of their own
NOTE_ENTRIES = 8  # a note names at most this many paths per kind of cut
_NOTE_KEY_SIZE = len(compact(NOTE_KEY)) + 1


def largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """The largest x in [lo, hi] with ok(x), ok being monotone (true up to some x); None when ok(lo) fails."""
    if hi < lo or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


@dataclass(frozen=True)
class Resume:
    """How an answer that pages goes on: the cursor after item `id_key` of its list `items`, and its flag."""

    items: str
    id_key: str
    cursor: str
    flag: str


@dataclass
class _Trimmed:
    """A list (or map) a trim cut, and what it cut: (key, value) from the end, each with its size and comma."""

    container: list[Any] | dict[str, Any]
    tail: list[tuple[Any, Any]]
    costs: list[int]


@dataclass
class _Shortened:
    """The texts a shorten reached, as they were before it, by (id of container, key)."""

    texts: dict[tuple[int, Any], tuple[Any, Text]] = field(default_factory=dict)


def _entry(key: Any, value_size: int) -> int:  # noqa: ANN401 - a map key or a list index
    """A list item's or a map entry's size in its container, comma included."""
    return (len(compact(key)) + 1 if isinstance(key, str) else 0) + value_size + 1


def _buckets(costs: Iterator[list[int]]) -> tuple[list[int], list[int], int]:
    """Per position: the items' costs there and how many containers reach it; and the containers not empty."""
    cost_at: list[int] = []
    count_at: list[int] = []
    nonempty = 0
    for listed in costs:
        nonempty += bool(listed)
        for i, c in enumerate(listed):
            if i == len(cost_at):
                cost_at.append(0)
                count_at.append(0)
            cost_at[i] += c
            count_at[i] += 1
    return cost_at, count_at, nonempty


class Work:
    """The answer's copy, its size (without the note) and its cuts."""

    def __init__(self, text: str, max_chars: int, reserve: int = 0) -> None:
        self.tree: dict[str, Any] = json.loads(text)  # the one copy
        self.total = len(text)
        self.max_chars = max_chars
        self.room = max_chars - reserve  # what the cuts aim at
        self.omitted: list[str] = []
        self.caps: dict[str, int] = {}  # shortened paths -> cap (those that cut)
        self.dropped: dict[str, int] = {}  # trimmed paths -> items left out
        self.trimmed: dict[str, tuple[int, dict[int, _Trimmed]]] = {}  # path -> (items kept, by id(container))
        self.shortened: dict[str, tuple[int, _Shortened]] = {}
        self.dropped_keys: list[str] = []
        if NOTE_KEY in self.tree:  # the note takes its place
            self._remove(self.tree, NOTE_KEY)

    # --- size -----------------------------------------------------------------------------------

    def note(self, *, caps: dict[str, int] | None = None, dropped: dict[str, int] | None = None) -> dict[str, Any]:
        note: dict[str, Any] = {"max_chars": self.max_chars}
        dropped = {p: n for p, n in (self.dropped if dropped is None else dropped).items() if n}
        shortened = self.caps if caps is None else caps
        if dropped:
            note["dropped"] = dict(list(dropped.items())[:NOTE_ENTRIES])
        if shortened:
            note["shortened"] = dict(list(shortened.items())[:NOTE_ENTRIES])
        omitted = self.omitted + self.dropped_keys[::-1]
        if omitted:
            note["omitted"] = omitted[:NOTE_ENTRIES]
        return note

    def with_note(self, total: int, note: dict[str, Any]) -> int:
        """The answer's size with its note, the answer's own fields measuring `total`."""
        return total + _NOTE_KEY_SIZE + len(compact(note)) + (1 if self.tree else 0)

    def resume(self, how: Resume) -> None:
        """After a trim of the paged items: the cursor after the last one kept, and the flag that says more come."""
        items = self.tree.get(how.items)
        if not self.dropped.get(how.items) or not isinstance(items, list) or not items:
            return
        last = items[-1].get(how.id_key) if isinstance(items[-1], dict) else None
        for key, value in ((how.cursor, last), (how.flag, True)):
            if key in self.tree and value is not None:
                self.total += len(compact(value)) - len(compact(self.tree[key]))
                self.tree[key] = value

    def fits(self) -> bool:
        return self.with_note(self.total, self.note()) <= self.room

    def answer(self) -> dict[str, Any]:
        out = self.tree
        out[NOTE_KEY] = self.note()
        return out

    def _remove(self, container: dict[str, Any], key: str) -> None:
        self.total -= _entry(key, len(compact(container[key]))) - (1 if len(container) == 1 else 0)
        del container[key]

    # --- omit -------------------------------------------------------------------------------------

    def omit(self, path: str) -> None:
        found = [(c, k) for c, k in slots(self.tree, segments(path)) if isinstance(c, dict) and k in c]
        for container, key in found:
            self._remove(container, key)
        if found:
            self.omitted.append(path)

    def drop_last_key(self) -> bool:
        if not self.tree:
            return False
        key = list(self.tree)[-1]
        self._remove(self.tree, key)
        self.dropped_keys.append(key)
        return True

    # --- shorten ----------------------------------------------------------------------------------

    def _texts(self, places: Iterator[tuple[Any, Any]]) -> list[tuple[Any, Any, Text]]:
        return [(c, k, Text.of(c[k])) for c, k in places if isinstance(c[k], str)]

    def _cap(self, path: str, texts: list[tuple[Any, Any, Text]], now: int, lo: int, hi: int) -> int | None:
        """The largest cap in [lo, hi] with which the texts fit (`now`: their size as they stand)."""
        caps = dict(self.caps)
        caps.pop(path, None)

        def ok(cap: int) -> bool:
            after = self.total - now + sum(t.size_at(cap) for _, _, t in texts)
            said = {**caps, path: cap} if any(t.cut_at(cap) for _, _, t in texts) else caps
            return self.with_note(after, self.note(caps=said)) <= self.room

        return largest(lo, hi, ok)

    def _set_cap(self, path: str, texts: list[tuple[Any, Any, Text]], now: int, cap: int) -> None:
        self.total += sum(t.size_at(cap) for _, _, t in texts) - now
        for container, key, text in texts:
            container[key] = cut(text.value, cap) if text.cut_at(cap) else text.value
        if any(t.cut_at(cap) for _, _, t in texts):
            self.caps[path] = cap  # in the order the steps first cut
        else:
            self.caps.pop(path, None)

    def shorten(self, path: str, floor: int) -> None:
        texts = self._texts(slots(self.tree, segments(path)))
        now = sum(t.whole for _, _, t in texts)
        longest = max((len(t.value) for _, _, t in texts), default=0)
        cap = self._cap(path, texts, now, floor, longest) or floor
        self._set_cap(path, texts, now, cap)
        self.shortened[path] = (cap, _Shortened({(id(c), k): (c, t) for c, k, t in texts}))

    def lengthen(self, path: str) -> None:
        """The texts a shorten cut, as long again as the room now allows."""
        cap, before = self.shortened[path]
        texts = [
            (c, k, t)
            for c, k in slots(self.tree, segments(path))
            if (held := before.texts.get((id(c), k))) is not None and held[0] is c
            for t in (held[1],)
        ]
        now = sum(t.size_at(cap) for _, _, t in texts)
        longest = max((len(t.value) for _, _, t in texts), default=0)
        better = self._cap(path, texts, now, cap, longest)
        if better is not None and better > cap:
            self._set_cap(path, texts, now, better)
            self.shortened[path] = (better, before)

    def shorten_every_text(self) -> None:
        """The fallback: every string of the answer capped, as long as the room allows."""
        texts = self._texts(every_slot(self.tree))
        now = sum(t.whole for _, _, t in texts)
        longest = max((len(t.value) for _, _, t in texts), default=0)
        cap = self._cap("*", texts, now, 0, longest) or 0
        self._set_cap("*", texts, now, cap)

    # --- trim -------------------------------------------------------------------------------------

    def trim(self, path: str) -> None:
        """Keep the first items of each list (or map) at the path, as many as fit."""
        found: list[_Trimmed] = []
        for value in nodes(self.tree, segments(path)):
            if isinstance(value, list):
                pairs: list[tuple[Any, Any]] = [(None, v) for v in value]
            elif isinstance(value, dict):
                pairs = list(value.items())
            else:
                continue
            found.append(_Trimmed(value, pairs, [_entry(k, len(compact(v))) for k, v in pairs]))
        cost_at, count_at, nonempty = _buckets(t.costs for t in found)
        saved = [*accumulate(reversed(cost_at))][::-1] + [0]  # saved[k]: the size k items in each leave out
        gone = [*accumulate(reversed(count_at))][::-1] + [0]
        saved[0] -= nonempty  # an emptied container has no comma to lose
        before = self.dropped.get(path, 0)

        def size_keeping(k: int) -> int:
            return self.with_note(self.total - saved[k], self.note(dropped={**self.dropped, path: before + gone[k]}))

        keep = largest(0, len(cost_at), lambda k: size_keeping(k) <= self.room) or 0
        for t in found:
            t.tail, t.costs = t.tail[keep:], t.costs[keep:]
            if isinstance(t.container, list):
                del t.container[keep:]
            else:
                for key, _ in t.tail:
                    del t.container[key]
        self.total -= saved[keep]
        self.dropped[path] = before + gone[keep]
        self.trimmed[path] = (keep, {id(t.container): t for t in found if t.tail})

    def untrim(self, path: str) -> None:
        """The items a trim cut, back as far as the room now allows (the containers still in the answer)."""
        keep, cut_from = self.trimmed[path]
        here = [t for v in nodes(self.tree, segments(path)) if (t := cut_from.get(id(v))) and t.container is v]
        cost_at, count_at, nonempty = _buckets(t.costs for t in here)
        added = [0, *accumulate(cost_at)]  # added[j]: j more items in each
        back = [0, *accumulate(count_at)]
        if keep == 0:  # an emptied container gets its first item without a comma
            added = [a - (nonempty if j else 0) for j, a in enumerate(added)]

        def size_adding(j: int) -> int:
            dropped = {**self.dropped, path: self.dropped[path] - back[j]}
            return self.with_note(self.total + added[j], self.note(dropped=dropped))

        more = largest(0, len(cost_at), lambda j: size_adding(j) <= self.room) or 0
        if not more:
            return
        for t in here:
            restored = t.tail[:more]
            if isinstance(t.container, list):
                t.container.extend(v for _, v in restored)
            else:
                t.container.update(restored)
            t.tail, t.costs = t.tail[more:], t.costs[more:]
        self.total += added[more]
        self.dropped[path] -= back[more]
        self.trimmed[path] = (keep + more, cut_from)
