"""bench/lib: the relevance metrics, the nearest-rank percentile and the table every entry point prints."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from lib.relevance import means, mrr, ndcg, precision_at_1, recall  # noqa: E402
from lib.table import print_table  # noqa: E402
from lib.timing import percentile  # noqa: E402


def test_the_metrics_of_a_ranking() -> None:
    grades = {"a": 2, "b": 1}
    assert ndcg(["a", "b", "x"], grades) == pytest.approx(1.0)
    assert ndcg(["x", "a"], grades) == pytest.approx((3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert (mrr(["x", "b"], grades), recall(["x", "b"], grades), precision_at_1(["x", "b"], grades)) == (0.5, 0.5, 0.0)
    assert ndcg([], grades) == mrr([], grades) == recall([], grades) == precision_at_1([], grades) == 0.0
    assert means([(1.0, 0.0, 0.5, 1.0), (0.0, 0.0, 0.5, 0.0)]) == [0.5, 0.0, 0.5, 0.5]


def test_the_nearest_rank_percentile() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (50.0, 99.0, 100.0)
    assert percentile([7.0], 99) == 7.0 and percentile([], 50) == 0.0


def test_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    print_table(["source", "records", "share"], [["sigma", 3781, 0.5], ["capec", 12, None]])
    assert capsys.readouterr().out.splitlines() == [
        "source  records  share",
        "sigma      3781  0.500",
        "capec        12",
    ]
