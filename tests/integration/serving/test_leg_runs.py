"""A search statement that fails on PostgreSQL names itself for the error log (serving/search/leg_runs.py)."""

from __future__ import annotations

import psycopg
import pytest

from serving.contract.errors import statement_of
from serving.search.leg_runs import fetch


def test_a_failed_statement_carries_its_name(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert fetch(conn, "SELECT %(one)s::int AS x", {"one": 1}, "search:probe") == [{"x": 1}]
        with pytest.raises(psycopg.errors.DivisionByZero) as failed:
            fetch(conn, "SELECT 1 / %(zero)s::int AS x", {"zero": 0}, "search:probe")
    assert statement_of(failed.value) == {"statement": "search:probe"}
