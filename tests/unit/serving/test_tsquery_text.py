"""The full-text leg's inputs (serving/search/tsquery_text.py): typed text kept, operator soup and size bounded."""

from __future__ import annotations

import pytest

from serving.search import analysis, tsquery_text

YARA = "/* Rule Set ----------------------------------------------------------------- */"


@pytest.mark.parametrize(
    "query",
    [
        "lsass memory dump",
        "mimikatz",
        "T1003.001",
        "CVE-2021-44228",
        "cmd.exe /c whoami",
        "Proxy: Internal Proxy",
        "Expolit Public-Facing Application",
        '"pass the hash" -kerberos',
        "mimikatz or procdump",
        "a - b",
        "powershell -enc",
    ],
)
def test_typed_keyword_queries_are_searched_as_typed(query: str) -> None:
    assert analysis.analyse(query).fts_text == query


def test_prose_is_its_words_ored() -> None:
    a = analysis.analyse("how do attackers run mimikatz.exe against T1003.001 or lsass")
    assert a.fts_text == "how or do or attackers or run or mimikatz.exe or against or T1003.001 or lsass"
    assert a.ident_text == "mimikatz or mimikatz.exe or t1003 or t1003.001"


@pytest.mark.parametrize(
    ("query", "fts_text"),
    [
        (YARA, "/* Rule Set   */"),
        ("a -- b", "a   b"),
        ("--help", " help"),
        ("x - - - - - - y", "x   y"),
        ('x -"-!-(-)-" y', 'x  " y'),
        ("a-b--c", "a-b--c"),  # inside a word, `-` is no operator
    ],
)
def test_runs_of_negations_read_as_a_space(query: str, fts_text: str) -> None:
    assert tsquery_text.keyword_text(query, []) == fts_text


def test_a_keyword_query_of_many_signs_is_searched_by_its_words() -> None:
    query = "mimikatz " + "!? " * 200 + "lsass"
    assert analysis.analyse(query).query_type == "keyword"
    assert analysis.analyse(query).fts_text == "mimikatz lsass"


def test_terms_are_bounded() -> None:
    long_word = "-".join(["x"] * 30000)
    assert tsquery_text.terms("lsass") == 1
    assert tsquery_text.terms("mimikatz.exe") == 3
    assert tsquery_text.terms(long_word) == 30001
    a = analysis.analyse(" ".join(f"w{i}" for i in range(5000)))
    assert a.fts_text.count(" or ") == tsquery_text.MAX_TERMS - 1
    a = analysis.analyse(f"the tool {long_word} runs a file")
    assert sum(tsquery_text.terms(w) for w in a.fts_text.split(" or ")) <= tsquery_text.MAX_TERMS
    assert a.fts_text.startswith("the or tool or x or runs")
    assert "x-x" not in a.ident_text


def test_bounded_words_keep_ordinary_words_and_their_order() -> None:
    words = ["lsass", "memory", "lsass", "dump"]
    assert tsquery_text.bounded_words(words) == words  # repeats kept: the text is unchanged
    assert tsquery_text.bounded_words(words, budget=2) == ["lsass", "memory"]


def test_identifier_forms_of_many_terms_are_left_out() -> None:
    assert tsquery_text.identifier_text({"t1003", "or", "a.b.c"}, 32) == "a.b.c or t1003"
    assert tsquery_text.identifier_text({".".join("a" * 20), "x1"}, 32) == "x1"


def test_pieces_are_what_postgresql_reads_as_words() -> None:
    """PostgreSQL's parser reads letters and ASCII digits as words and everything else (superscripts, other numerals,
    `_`) as spaces: a run of "ì²" is thousands of terms there, so it is here (hypothesis found it, 12,537 nodes)."""
    from serving.search.tsquery_text import MAX_TERMS, bounded_words, keyword_text, terms

    soup = "ì²" * 3000
    assert terms(soup) > MAX_TERMS
    assert bounded_words([soup]) == ["ì"]
    assert keyword_text(soup, [soup]) == "ì"
    assert terms("a_b") == 3 and terms("x1") == 1 and terms("T1003.001") == 3
