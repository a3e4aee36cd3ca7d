"""Every query text is a valid query: generated operator soup, through the query builder (serving/search/analysis.py,
serving/search/tsquery_text.py), into the search's own `tsq` and `ident_tsq` expressions on a real PostgreSQL."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from psycopg import sql

from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.contract.requests import HARD_MAX_QUERY_CHARS
from serving.search import analysis
from serving.search.tsquery_text import MAX_TERMS

QUERIES = Queries(sql_dir(), "serving")
# Parsed, matched, ranked and highlighted as the search statements do: `tsq` in the full-text legs and snippets,
# `ident_tsq` in the identifier tier; the document is the query's own words, so terms match and rank.
STATEMENT = sql.SQL(
    "SELECT numnode({tsq}) AS nodes, numnode({ident_tsq}) AS ident_nodes,"
    " d.tsv @@ {tsq} AS hit, d.tsv @@ {ident_tsq} AS ident_hit, ts_rank_cd(d.tsv, {tsq}, 32) AS rank,"
    " ts_headline('english', %(doc)s, {tsq}) AS snippet"
    " FROM (SELECT to_tsvector('english', %(doc)s) || to_tsvector('simple', %(doc)s) AS tsv) d"
).format(tsq=sql.SQL(QUERIES.tsq), ident_tsq=sql.SQL(QUERIES.ident_tsq))

# What websearch_to_tsquery and tsquery syntax read as operators, spaces PostgreSQL and Python disagree on, words
# and identifiers, stop words, and the words that are operators.
OPERATORS = [*"-!|&\"'<>()*:\\", "--", "<->", "<2>", ":*", ":A", "\\-", "/* ", " */"]
SPACES = [" ", "  ", "\t", "\n", "\x1c", "\x85", "\u00a0", "\u3000"]
WORDS = "or OR and not the a x1 é lsass T1003.001 cmd.exe a-b a.b -x /c _ @ # 0 1.5 -1".split()
FRAGMENTS = [*OPERATORS, *SPACES, *WORDS]
PIECES = st.tuples(
    st.one_of(
        st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map("".join),
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=6),
    ),
    st.one_of(st.integers(1, 3), st.integers(28, 40), st.integers(500, 40000)),  # around the stack of 32, and 64 KB
)
YARA = "/* Rule Set ----------------------------------------------------------------- */"  # a line of a threat report
SOUP = st.lists(PIECES, min_size=1, max_size=8).map(
    lambda parts: "".join(f * n for f, n in parts)[:HARD_MAX_QUERY_CHARS]
)


def _run(conn: psycopg.Connection[Any], query: str) -> dict[str, Any]:
    a = analysis.analyse(query)
    params = {"fts_text": a.fts_text, "ident_text": a.ident_text, "doc": query[:2000]}
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        row = cur.execute(STATEMENT, params).fetchone()
    assert row is not None
    assert row["nodes"] <= 4 * MAX_TERMS + 200  # bounded whatever the length (operators included)
    return row


@pytest.mark.parametrize(
    "query",
    [
        YARA,
        "-" * HARD_MAX_QUERY_CHARS,
        "x " + "- " * 20000,
        " ".join(["x"] * 30000),
        "x-" * 30000,
        ":" * HARD_MAX_QUERY_CHARS,
        '"' * HARD_MAX_QUERY_CHARS,
        "a@b." * 15000,
        '"' + "a b " * 8000 + '"',
        "a|" * 30000,
        "<->" * 20000,
    ],
    ids=lambda q: repr(q[:12]) + f"x{len(q)}",
)
def test_known_failures_are_valid_queries(db: psycopg.Connection[Any], query: str) -> None:
    _run(db, query)


def test_ordinary_queries_keep_their_tsquery(db: psycopg.Connection[Any]) -> None:
    row = _run(db, "lsass memory dump")
    assert (row["nodes"], row["hit"]) == (5, True)
    assert _run(db, '"pass the hash" -kerberos')["nodes"] == 6  # a phrase and a negation, as websearch reads them


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=SOUP)
@example(query="-" * 33)
@example(query="x " + "- " * 40 + "y")
def test_operator_soup_is_a_valid_query(db: psycopg.Connection[Any], query: str) -> None:
    _run(db, query)


@pytest.mark.parametrize("mode", ["hybrid", "fts", "fuzzy"])
@pytest.mark.parametrize("query", [YARA, "-" * 8000, "x-" * 4000, "! | & " * 1300], ids=["yara", "dashes", "x-", "ops"])
def test_operator_soup_is_searched(client: TestClient, query: str, mode: str) -> None:
    """The request that answered 500 `database_error` (`tsquery stack too small`) in every mode."""
    response = client.post("/v1/search", json={"query": query, "mode": mode})
    assert response.status_code == 200, response.text
    assert response.json()["query_type"] == "keyword"


def test_a_plan_of_operator_soup_is_made(client: TestClient) -> None:
    response = client.post("/v1/plan", json={"query": YARA})
    assert response.status_code == 200, response.text
