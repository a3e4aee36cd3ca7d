"""Spelling correction against the corpus's own vocabulary: a query word that no chunk the caller may see
contains is replaced, for the full-text leg only, by the closest word of the public document titles
(technique names, rule titles, tool and artefact names) or telemetry-schema field names within a small
edit distance. The vector leg
keeps the query as written; the response lists each correction."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from rapidfuzz import process
from rapidfuzz.distance import OSA

from serving.search.tsquery_text import terms

MIN_CHARS = 5  # shorter words are too often abbreviations or ids to correct
MAX_WORDS = 12  # a query's words checked at most (prose has few typos per word that matter)
# A longer word is no misspelling of a title word: it is never checked (nor remembered as known).
MAX_WORD_CHARS = 64
# Terms the checked words hold together, counted as PostgreSQL's parser splits them (tsquery_text.terms): each is
# one GIN lookup of the check, where a hyphenated word of 1,000 parts cost about a second.
MAX_CANDIDATE_TERMS = 64
MAX_KNOWN = 100_000  # words known to be in public chunks, remembered per vocabulary
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]")


def max_edits(word: str) -> int:
    """Edits (insert, delete, substitute, swap neighbours) allowed: 1 up to 7 letters, 2 beyond."""
    return 1 if len(word) <= 7 else 2


@dataclass(frozen=True)
class Vocabulary:
    """Lower-cased title words with the number of documents whose title holds them."""

    documents: dict[str, int]
    _by_length: dict[int, list[str]] = field(default_factory=dict, repr=False)
    # Words some chunk of a public document contains (so no caller needs them corrected), learnt from the
    # checks of callers who see public documents only; bounded, and gone with the vocabulary.
    known: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, int]]) -> Vocabulary:
        documents: dict[str, int] = {}
        for w, n in rows:  # a word both a title word and a field name counts once, at its larger count
            if _WORD.fullmatch(str(w)):
                documents[str(w)] = max(documents.get(str(w), 0), int(n))
        by_length: dict[int, list[str]] = defaultdict(list)
        for word in documents:
            by_length[len(word)].append(word)
        return cls(documents, dict(by_length))

    def closest(self, word: str) -> str | None:
        """The vocabulary word fewest edits away (within max_edits), then the most common, then the first."""
        limit = max_edits(word)
        best: tuple[int, int, str] | None = None
        for length in range(len(word) - limit, len(word) + limit + 1):
            choices = self._by_length.get(length, ())
            for candidate, distance, _ in process.extract(
                word, choices, scorer=OSA.distance, score_cutoff=limit, limit=None
            ):
                key = (int(distance), -self.documents[candidate], candidate)
                if best is None or key < best:
                    best = key
        return best[2] if best else None


def candidates(query: str, vocabulary: Vocabulary) -> list[str]:
    """The query's words worth checking: long enough (and not too long), alphabetic, not title words already; at
    most MAX_WORDS of them, holding at most MAX_CANDIDATE_TERMS terms together."""
    words = dict.fromkeys(w.lower() for w in _WORD.findall(query) if MIN_CHARS <= len(w) <= MAX_WORD_CHARS)
    out: list[str] = []
    spent = 0
    for word in words:
        if word in vocabulary.documents or word in vocabulary.known:
            continue
        cost = terms(word)
        if spent + cost > MAX_CANDIDATE_TERMS:
            continue
        out.append(word)
        spent += cost
        if len(out) == MAX_WORDS:
            break
    return out


def corrections(
    conn: psycopg.Connection,
    statement: str,
    params: dict[str, Any],
    query: str,
    vocabulary: Vocabulary,
    *,
    public_only: bool,
) -> dict[str, str]:
    """Misspelt word -> the title word the full-text leg searches instead (none when every word is known).

    `statement` returns the words of `words` that no chunk the caller may see contains (GIN lookups of
    rare words; title words and words learnt present are never asked). A caller who sees public
    documents only (`public_only`) teaches the vocabulary which words are present."""
    words = candidates(query, vocabulary)
    if not words:
        return {}
    absent = [r[0] for r in conn.execute(statement, {**params, "words": words}).fetchall()]
    if public_only and len(vocabulary.known) < MAX_KNOWN:
        vocabulary.known.update(set(words) - set(absent))
    out = {}
    for word in absent:
        fixed = vocabulary.closest(word)
        if fixed and fixed != word:
            out[word] = fixed
    return out


def apply(text: str, fixes: dict[str, str]) -> str:
    """The text with each misspelt word (any case, whole words) replaced."""
    if not fixes:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in fixes) + r")\b", re.IGNORECASE)
    return pattern.sub(lambda m: fixes[m.group(0).lower()], text)
