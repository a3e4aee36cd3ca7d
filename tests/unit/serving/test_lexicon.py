"""Match-count estimates from the column statistics of chunks.tsv."""

from __future__ import annotations

import pytest

from serving.search.lexicon import LexemeStats


def _stats() -> LexemeStats:
    return LexemeStats.from_row(
        {
            "lexemes": ["user", "execut", "powershel"],
            "freqs": [0.2, 0.1, 0.05, 0.05, 0.2, 0],
            "chunks": 10_000,
            "sources": ["sigma", "atomic"],
            "source_freqs": [0.6, 0.4],
        }
    )


def test_all_of_takes_the_rarest_word_and_unknown_words_are_rare() -> None:
    stats = _stats()
    assert stats.estimate(["user", "execut"], []) == pytest.approx(1000)
    assert stats.estimate(["user", "zzzunknown"], []) == pytest.approx(500)  # rarer than the rarest listed
    assert stats.estimate([], []) == 0


def test_any_of_adds_up_and_sources_scale() -> None:
    stats = _stats()
    assert stats.estimate(["user"], ["powershel"]) == pytest.approx(2500)
    assert stats.estimate(["user"], [], ["atomic"]) == pytest.approx(800)
    assert stats.estimate(["user"], [], ["unknown"]) == 0


def test_no_statistics_yet() -> None:
    assert LexemeStats.from_row(None).estimate(["user"], []) == 0
    empty = LexemeStats.from_row({"lexemes": None, "freqs": None, "chunks": 5, "sources": None, "source_freqs": None})
    assert not empty.shares and empty.chunks == 5


def test_chunks_in_sources() -> None:
    stats = _stats()
    assert stats.chunks_in(None) == stats.chunks_in([]) == 10_000
    assert stats.chunks_in(["sigma", "sigma"]) == pytest.approx(6000)
