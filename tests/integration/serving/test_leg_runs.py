"""How a search's statements are sent (serving/search/leg_runs.py): a failure names its statement for the
error log, and a generic plan is the round trip's, never the session's."""

from __future__ import annotations

import psycopg
import pytest

from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.contract.errors import statement_of
from serving.search.leg_runs import Sent, fetch, fetch_all

MODE = "current_setting('plan_cache_mode') AS mode"


def test_a_failed_statement_carries_its_name(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert fetch(conn, "SELECT %(one)s::int AS x", {"one": 1}, "search:probe") == [{"x": 1}]
        with pytest.raises(psycopg.errors.DivisionByZero) as failed:
            fetch(conn, "SELECT 1 / %(zero)s::int AS x", {"zero": 0}, "search:probe")
    assert statement_of(failed.value) == {"statement": "search:probe"}


def test_a_generic_plan_holds_for_its_statement_only(db_url: str) -> None:
    """The statements before the generic one keep the session's plan mode, and the session keeps it after,
    however often the (then prepared) statement runs and whether it fails."""
    generic_plan = Queries(sql_dir(), "serving").generic_plan
    custom = Sent(f"SELECT %(one)s::int AS x, {MODE}", {"one": 1}, "search:vec")
    generic = Sent(f"SELECT %(one)s::int + 1 AS y, {MODE}", {"one": 1}, "search:neighbours", generic=True)
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("SELECT set_config('plan_cache_mode', 'force_custom_plan', false)")  # as a reader session
        for _ in range(3):
            assert fetch_all(conn, generic_plan, [custom, generic]) == [
                [{"x": 1, "mode": "force_custom_plan"}],
                [{"y": 2, "mode": "force_generic_plan"}],
            ]
            assert conn.execute("SHOW plan_cache_mode").fetchone() == ("force_custom_plan",)
        failing = Sent("SELECT 1 / %(zero)s::int AS x", {"zero": 0}, "search:neighbours", generic=True)
        with pytest.raises(psycopg.errors.DivisionByZero) as failed:
            fetch_all(conn, generic_plan, [custom, failing])
        assert statement_of(failed.value) == {"statement": "search:vec+search:neighbours"}
        assert conn.execute("SHOW plan_cache_mode").fetchone() == ("force_custom_plan",)
        assert fetch(conn, f"SELECT {MODE}", {}, "search:probe") == [{"mode": "force_custom_plan"}]
