"""Spelling correction's choices: the corpus word fewest edits away, then the most common; whole words
only; short words and title words are never touched."""

from __future__ import annotations

from serving.search.spelling import Vocabulary, apply, candidates, max_edits

VOCAB = Vocabulary.from_rows(
    [("rename", 40), ("renames", 2), ("deletion", 30), ("credential", 120), ("credentials", 90), ("dump", 50)]
)


def test_the_closest_word_wins_then_the_most_common() -> None:
    assert VOCAB.closest("renmae") == "rename"  # two neighbours swapped: one edit
    assert VOCAB.closest("deeltion") == "deletion"
    assert VOCAB.closest("credentail") == "credential"  # 'credentials' is two edits away
    assert VOCAB.closest("credntials") == "credentials"
    assert VOCAB.closest("zzzzzz") is None


def test_edits_allowed_grow_with_the_word() -> None:
    assert (max_edits("rename"), max_edits("exfiltration")) == (1, 2)
    assert VOCAB.closest("rnmea") is None  # three edits from 'rename'


def test_only_long_words_missing_from_the_titles_are_candidates() -> None:
    assert candidates("Renmae the dump T1003 of lsass credential", VOCAB) == ["renmae", "lsass"]


def test_corrections_replace_whole_words_in_any_case() -> None:
    text = "Masquerading: Renmae or renmae or renmaed"
    assert apply(text, {"renmae": "rename"}) == "Masquerading: rename or rename or renmaed"
    assert apply(text, {}) == text


def test_candidates_are_bounded_like_the_full_text_input() -> None:
    from serving.search.spelling import MAX_CANDIDATE_TERMS, MAX_WORD_CHARS, MAX_WORDS
    from serving.search.tsquery_text import terms

    assert candidates("-".join(["movment"] * 1000), VOCAB) == []  # 8 KB: no misspelling of a title word
    assert candidates("x" * (MAX_WORD_CHARS + 1) + " renmae", VOCAB) == ["renmae"]
    # twelve distinct compounds of ten parts each (59 characters, 11 terms): the terms' budget stops them first
    compounds = " ".join("-".join(f"ren{chr(97 + i)}{chr(97 + j)}" for j in range(10)) for i in range(12))
    words = candidates(compounds, VOCAB)
    assert words and sum(terms(w) for w in words) <= MAX_CANDIDATE_TERMS < sum(terms(w) for w in words) + 11
    many = " ".join("renmae" + chr(97 + i) for i in range(26))
    assert len(candidates(many, VOCAB)) == MAX_WORDS
