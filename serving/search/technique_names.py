"""ATT&CK technique names in a query: "OS Credential Dumping: NTDS" in the words of the question brings
its id (T1003.003), so that documents labelled with that technique can rank up even when their text
uses other words (the search's label leg)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_NON_WORD = re.compile(r"[^a-z0-9]+")
MIN_NAME_CHARS = 6  # shorter names ("Hooking" is 7) are too easily part of other prose
MAX_IDS = 4


def normalise(text: str) -> str:
    """Lower case, every run of other characters one space, padded so names match as whole words."""
    return f" {_NON_WORD.sub(' ', text.lower()).strip()} "


@dataclass(frozen=True)
class TechniqueNames:
    """Normalised technique names -> ids, longest first."""

    names: tuple[tuple[str, str], ...]
    # the positions in `names` of the names starting with each word: a name is in a query only if its first word is
    # (a query is checked against the few names its words start, not against every name)
    by_first_word: Mapping[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, list[int]] = {}
        for position, (name, _) in enumerate(self.names):
            index.setdefault(name.split(maxsplit=1)[0], []).append(position)
        object.__setattr__(self, "by_first_word", {word: tuple(found) for word, found in index.items()})

    @classmethod
    def from_lookup(cls, lookup: Mapping[str, str]) -> TechniqueNames:
        """From id -> full name; a name two ids share (in two ATT&CK domains) is the first one's."""
        pairs: dict[str, str] = {}
        for tid, name in lookup.items():
            if len(name.strip()) >= MIN_NAME_CHARS:
                pairs.setdefault(normalise(name), tid)
        return cls(tuple(sorted(pairs.items(), key=lambda p: (-len(p[0]), p[1]))))

    def find(self, query: str) -> tuple[str, ...]:
        """Ids of the techniques the query names in full, most specific first: a sub-technique's full name
        ("Parent: Sub") hides its parent's name inside it."""
        text = normalise(query)
        found: list[str] = []
        starts = sorted({p for word in set(text.split()) for p in self.by_first_word.get(word, ())})
        for name, tid in (self.names[p] for p in starts):  # in the order of `names`, longest first
            if name in text:
                found.append(tid)
                text = text.replace(name, " | ")  # the parent's name inside the full name is used up
                if len(found) == MAX_IDS:
                    break
        return tuple(found)
