"""A text's sentences with their offsets: lines joined into blocks (blank lines, bullets, headings and lines that
end a sentence break them), blocks cut after sentence-ending punctuation that no abbreviation, initial or
lower-case continuation explains, over-long sentences cut at a space, and fragments too short to mean
anything dropped.

Offsets are Python str indices (Unicode code points) into the text as given: `text[start:end]` is the
sentence, with its inner line breaks. No sentence splitter is installed with secrag, and threat reports need
rules of their own anyway (file names, IPs, defanged URLs and versions hold dots without a space after them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

MIN_WORDS = 3  # "Persistence", "Figure 3" and "IOCs:" carry no technique of their own
MAX_CHARS = 600  # longer runs (tables, IOC lists) are cut at a space: a query is about a sentence
HEADING_CHARS = 60  # a line this short without closing punctuation, followed by a capital, is a heading

# Words that end in a dot without ending the sentence (lower case, without the dot). Dotted
# abbreviations (e.g., i.e., U.S.) and single-letter initials are recognised by their shape.
ABBREVIATIONS = frozenset(
    """al approx apr aug ca cf co corp dec dept dr eg fig figs feb gen ie inc jan jr jul jun ltd mar mr mrs
    ms no nos nov oct op pp pt ref sec sep sept sr st vol vs""".split()
)

_BULLET = re.compile(r"\A[ \t]*+(?:[-*•◦▪‣·–—>]|\(?\d{1,3}[.)]|\(?[a-z][)])[ \t]+")
_LINE_END = re.compile(r"[.!?:;…][\"'”’)\]]*$")
# A run of end marks is matched from its first mark only, and wholly (possessive): a run of full stops with no
# space after it is one failed attempt, not one per mark (quadratic in the run's length before).
_SENTENCE_END = re.compile(r"(?<![.!?…])[.!?…]++[\"'”’)\]]*+(?=\s)")
_DOTTED = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a text: text[start:end]."""

    start: int
    end: int
    text: str

    @property
    def query(self) -> str:
        """The sentence as a search query: its whitespace (line breaks too) as single spaces."""
        return " ".join(self.text.split())


def split(text: str) -> list[Sentence]:
    """The text's sentences in order, each with at least MIN_WORDS words and at most MAX_CHARS characters."""
    found: list[Sentence] = []
    for block_start, block_end in _blocks(text):
        for start, end in _sentences(text, block_start, block_end):
            for piece_start, piece_end in _cut(text, start, end):
                piece = text[piece_start:piece_end]
                if len(piece.split()) >= MIN_WORDS and any(ch.isalnum() or ch == "_" for ch in piece):
                    found.append(Sentence(piece_start, piece_end, piece))
    return found


def _lines(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each line's content, without its line break."""
    start = 0
    for line in text.splitlines(keepends=True):
        content = line.rstrip("\r\n\u2028\u2029\x0b\x0c\x1c\x1d\x1e\x85")
        yield start, start + len(content)
        start += len(line)


def _blocks(text: str) -> Iterator[tuple[int, int]]:
    """Runs of lines that may hold one sentence across their line breaks, as (start, end), stripped and
    without a leading bullet."""
    block: tuple[int, int] | None = None
    previous = ""
    for start, end in _lines(text):
        line = text[start:end]
        bullet = _BULLET.match(line)
        if not line.strip():
            if block:
                yield block
            block, previous = None, ""
            continue
        content_start = start + (bullet.end() if bullet else len(line) - len(line.lstrip()))
        stripped = line.strip()
        joins = (
            block is not None
            and bullet is None
            and not _LINE_END.search(previous)
            and not (len(previous) <= HEADING_CHARS and not stripped[:1].islower())
        )
        if joins and block is not None:
            block = (block[0], start + len(line.rstrip()))
        else:
            if block:
                yield block
            block = (content_start, start + len(line.rstrip()))
        previous = stripped
    if block:
        yield block


def _sentences(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Sentences of one block: cut after an end mark followed by space and a character that is not lower case,
    unless the word before a single dot is an abbreviation, an initial or dotted (e.g., U.S.)."""
    begin = start
    for mark in _SENTENCE_END.finditer(text, start, end):
        following = _next_visible(text, mark.end(), end)
        if following is None:
            break
        if text[following].islower() or _abbreviation(text, begin, mark):
            continue
        yield begin, mark.end()
        begin = following
    if begin < end:
        yield begin, end


def _next_visible(text: str, at: int, end: int) -> int | None:
    while at < end and text[at].isspace():
        at += 1
    return at if at < end else None


def _abbreviation(text: str, begin: int, mark: re.Match[str]) -> bool:
    if mark.group() != ".":
        return False
    at = mark.start()
    while at > begin and not text[at - 1].isspace():
        at -= 1
    token = text[at : mark.start()].lstrip("(\"'“‘[")
    if not token:
        return False
    return (
        token.lower() in ABBREVIATIONS
        or _DOTTED.fullmatch(token) is not None
        or (len(token) == 1 and token.isalpha() and token.isupper())
    )


def _cut(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The sentence, or its pieces of at most MAX_CHARS cut at the last space before the cap (stripped)."""
    while end - start > MAX_CHARS:
        space = text.rfind(" ", start, start + MAX_CHARS)
        cut = space if space > start else start + MAX_CHARS
        stop = cut
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        yield start, stop
        nxt = _next_visible(text, cut, end)
        if nxt is None:
            return
        start = nxt
    yield start, end
