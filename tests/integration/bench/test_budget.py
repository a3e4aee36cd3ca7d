"""bench/budget.py's measures on the small graph's store (bench/lib/cpu.py): one client's wall time by share and
statement, and CPU per search at two clients by share, statement and planning time; a few dev queries each."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import psycopg
import pytest

from serving.search.leg_runs import LegRuns
from tests.plugins.graph import Harness

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # bench/lib, as the scripts import it
from lib import cpu  # noqa: E402


@pytest.fixture
def few_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five dev queries, and the hooks the bench puts in psycopg and the legs undone after the test."""
    bodies = cpu.search_bodies
    monkeypatch.setattr(cpu, "search_bodies", lambda no_filters: bodies(no_filters)[:5])
    monkeypatch.setattr(psycopg.Cursor, "execute", psycopg.Cursor.execute)
    monkeypatch.setattr(LegRuns, "rows", LegRuns.rows)


@pytest.mark.usefixtures("few_queries")
def test_one_client_splits_a_search_by_share(built: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    cpu.one_client(argparse.Namespace(database_url=built.url, no_filters=False, statements=True))
    out = capsys.readouterr().out
    assert "5 dev queries, hybrid, filters as labelled" in out
    shares = [line.split()[0] for line in out.splitlines()[2:7]]
    assert shares == ["encode", "postgres", "pg", "python", "total"]
    assert "mean ms per search  statement" in out and "legs: " in out


@pytest.mark.usefixtures("few_queries")
def test_clients_split_the_cpu_by_share_and_statement(built: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(database_url=built.url, no_filters=True, clients=2, rounds=1, shares=True, planning=True)
    cpu.report(args)
    out = capsys.readouterr().out
    assert "5 dev queries x 1 rounds, hybrid, filters off, 2 clients" in out
    assert "CPU ms per search: process" in out and "request threads (all of it below)" in out
    assert "encode (leader thread)" in out and "postgres, by statement:" in out
    assert "planning ms/search" in out
