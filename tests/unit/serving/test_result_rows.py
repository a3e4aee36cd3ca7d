"""A search result from its row: scores rounded, a leg without a rank left out, lists never null."""

from __future__ import annotations

from serving.search.result_rows import search_result

ROW = {
    "doc_id": "sigma:abc",
    "chunk_id": "sigma:abc#0",
    "source": "sigma",
    "title": "LSASS dump",
    "url": None,
    "score": 0.123456789,
    "exact": 0,
    "fts_score": 0.5,
    "fts_rank": 2,
    "vec_score": 0.8,
    "vec_rank": None,
    "fuzzy_score": None,
    "fuzzy_rank": None,
    "techniques": None,
    "platforms": ["windows"],
}


def test_a_row_becomes_a_result() -> None:
    result = search_result(ROW)
    assert result.score == 0.123457 and result.exact is False
    assert result.scores.fts is not None and (result.scores.fts.score, result.scores.fts.rank) == (0.5, 2)
    assert result.scores.vector is None and result.scores.fuzzy is None  # no rank: the leg did not find it
    assert result.techniques == [] and result.platforms == ["windows"]
    assert result.snippet is None and result.text is None and result.metadata is None
