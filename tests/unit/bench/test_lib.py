"""bench/lib: the relevance metrics, the nearest-rank percentile, a process's CPU and the table every entry point
prints."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from lib.relevance import means, mrr, ndcg, precision_at_1, recall  # noqa: E402
from lib.table import print_table  # noqa: E402
from lib.timing import cpu_ns, percentile  # noqa: E402


def test_the_metrics_of_a_ranking() -> None:
    grades = {"a": 2, "b": 1}
    assert ndcg(["a", "b", "x"], grades) == pytest.approx(1.0)
    assert ndcg(["x", "a"], grades) == pytest.approx((3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert (mrr(["x", "b"], grades), recall(["x", "b"], grades), precision_at_1(["x", "b"], grades)) == (0.5, 0.5, 0.0)
    assert ndcg([], grades) == mrr([], grades) == recall([], grades) == precision_at_1([], grades) == 0.0
    assert means([(1.0, 0.0, 0.5, 1.0), (0.0, 0.0, 0.5, 0.0)]) == [0.5, 0.0, 0.5, 0.5]


def test_a_process_cpu_and_its_childrens() -> None:
    before = cpu_ns(os.getpid())
    sum(i * i for i in range(1_000_000))  # tens of milliseconds of CPU: several clock ticks
    assert cpu_ns(os.getpid()) > before
    code = "sum(i * i for i in range(3_000_000)); print('ready', flush=True); input()"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"  # it has run, and now waits
        assert cpu_ns(os.getpid(), children=True) >= cpu_ns(child.pid) > 0
    finally:
        child.communicate(b"\n")
    assert cpu_ns(child.pid) == 0  # exited and reaped


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
