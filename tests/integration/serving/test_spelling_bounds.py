"""Spelling correction's SQL is bounded like the full-text input: a hyphenated word of 1,000 parts (8 KB) sent
to the real server answers 200, and the words its spelling check hands PostgreSQL stay within the candidates'
bounds (serving/search/spelling.py), counted as PostgreSQL's parser splits them."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest

from serving.search.spelling import MAX_CANDIDATE_TERMS, MAX_WORD_CHARS, MAX_WORDS
from serving.search.tsquery_text import terms

HYPHENATED = "-".join(["movment"] * 1000)  # 8 KB of 1,000 parts (a misspelt word, repeated)
QUERIES = [
    HYPHENATED,
    f"lsass {HYPHENATED} dump",
    " ".join(f"{w}-{w}-{w}" for w in ["credentail", "exfiltrashun", "persistance", "escalaton"] * 40),
]


@pytest.fixture
def words_sent(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The `words` parameter of every statement the server executes (the spelling check's only input)."""
    sent: list[list[str]] = []
    execute = psycopg.Connection.execute

    def recording(self: psycopg.Connection[Any], query: Any, params: Any = None, **kw: Any) -> Any:  # noqa: ANN401
        if isinstance(params, dict) and "words" in params:
            sent.append(list(params["words"]))
        return execute(self, query, params, **kw)

    monkeypatch.setattr(psycopg.Connection, "execute", recording)
    return sent


@pytest.mark.parametrize("mode", ["hybrid", "fts", "fuzzy"])
@pytest.mark.parametrize("query", QUERIES, ids=["8kb-word", "8kb-word-in-prose", "many-compounds"])
def test_a_huge_hyphenated_word_reaches_sql_bounded(
    live_api: str, words_sent: list[list[str]], query: str, mode: str
) -> None:
    response = httpx.post(f"{live_api}/v1/search", json={"query": query, "mode": mode}, timeout=60)
    assert response.status_code == 200, response.text
    for words in words_sent:
        assert len(words) <= MAX_WORDS
        assert all(len(w) <= MAX_WORD_CHARS for w in words)
        assert sum(terms(w) for w in words) <= MAX_CANDIDATE_TERMS


def test_a_misspelt_compound_is_still_checked(live_api: str, words_sent: list[list[str]]) -> None:
    response = httpx.post(f"{live_api}/v1/search", json={"query": "credentail dumping", "mode": "fuzzy"}, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["corrections"] == {"credentail": "credential"}
    assert ["credentail"] in [[w for w in words if w == "credentail"] for words in words_sent]
