"""The texts the full-text leg hands to websearch_to_tsquery, bounded so PostgreSQL accepts whatever a caller typed.

PostgreSQL's websearch parser reads a `-` that starts an operand as NOT and keeps consecutive NOTs on an operator
stack of 32 ("tsquery stack too small", SQLSTATE XX000: a YARA comment line `/* ----...---- */` was a 500), and it
builds, checks and ranks a query recursively: tens of thousands of operands exceed the stack depth, and ts_rank_cd
of ten thousand asks for gigabytes. So a run of NOTs is read as a space, and a text past a few hundred terms is
searched by its words, at most MAX_TERMS of them. Text without either keeps its websearch syntax unchanged
(words ANDed, `"phrases"`, `-word`, `or`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# Terms (each word of a word joined by `-` or `.` counts, as PostgreSQL splits it) a full-text input holds at most:
# a 1,024-term query parses in milliseconds and ranks a chunk in about 0.1 s, where ten thousand ran out of memory.
MAX_TERMS = 1024
# A keyword query is searched as typed up to this many words and signs (pieces as below, and other characters).
MAX_TYPED_UNITS = 256
# Identifier forms of more terms than this are left out of the identifier leg (real ones have at most 6).
MAX_IDENTIFIER_TERMS = 16

# What the websearch parser passes over before an operand: spaces, the operators it ignores, quotes (and, read
# conservatively, the characters of tsquery syntax); a NOT is a `-` there, so two with only these between stack.
_SKIPPED = r"\s!&|()<>\"':*\\"
_NOT_RUN = re.compile(rf"(?<![^{_SKIPPED}])-(?:[{_SKIPPED}]*-)+")
# A word's pieces as PostgreSQL's parser reads them, counted never fewer than it makes: runs of letters and ASCII
# digits. Python's \w also takes other numerals (superscripts, fractions) and `_`, which PostgreSQL reads as
# spaces: a run of "ì²" was one word here and thousands of terms there (a 12,537-node query past MAX_TERMS).
_ASCII_PIECE = re.compile(r"[A-Za-z0-9]+")
_ASCII_UNIT = re.compile(r"[A-Za-z0-9]+|\S")


def _is_word_char(c: str) -> bool:
    return c.isalpha() or "0" <= c <= "9"


def _pieces(word: str) -> list[str]:
    if word.isascii():
        return _ASCII_PIECE.findall(word)
    return "".join(c if _is_word_char(c) else " " for c in word).split()


def terms(word: str) -> int:
    """The terms PostgreSQL makes of a word: each of its pieces, and the whole when it has several."""
    pieces = len(_pieces(word))
    return pieces + 1 if pieces > 1 else max(pieces, 1)


def typed_units(text: str, limit: int) -> int:
    """The words and signs of `text`, counted up to `limit` + 1."""
    count = 0
    if text.isascii():
        for _ in _ASCII_UNIT.finditer(text):
            count += 1
            if count > limit:
                break
        return count
    in_word = False
    for c in text:
        word = _is_word_char(c)
        if word and not in_word or not word and not c.isspace():
            count += 1
            if count > limit:
                break
        in_word = word
    return count


def bounded_words(words: Sequence[str], budget: int = MAX_TERMS) -> list[str]:
    """`words` as they are while their terms fit the budget; past it, their distinct words (a word of more than
    MAX_IDENTIFIER_TERMS terms by its pieces) in order, until the budget is spent."""
    if sum(terms(w) for w in words) <= budget:
        return list(words)
    out: dict[str, None] = {}
    spent = 0
    for word in words:
        parts = [word] if terms(word) <= MAX_IDENTIFIER_TERMS else _pieces(word)
        for part in parts:
            if part in out:
                continue
            cost = terms(part)
            if spent + cost > budget:
                return list(out)
            out[part] = None
            spent += cost
    return list(out)


def keyword_text(text: str, words: Sequence[str]) -> str:
    """A keyword or identifier query's full-text input: the text as typed (websearch syntax), with each run of
    NOTs read as a space; a text of more than MAX_TYPED_UNITS words and signs, by its words ANDed."""
    typed = _NOT_RUN.sub(" ", text)
    if typed_units(typed, MAX_TYPED_UNITS) <= MAX_TYPED_UNITS:
        return typed
    return " ".join(bounded_words(words))


def prose_text(words: Sequence[str]) -> str:
    """A prose query's full-text input: its words ORed (at most MAX_TERMS terms)."""
    return " or ".join(bounded_words(words))


def identifier_text(forms: Iterable[str], limit: int) -> str:
    """The identifier leg's input: the first `limit` forms (sorted) of at most MAX_IDENTIFIER_TERMS terms, ORed."""
    kept = sorted(f for f in forms if f not in {"or", "and"} and terms(f) <= MAX_IDENTIFIER_TERMS)
    return " or ".join(kept[:limit])
