"""Approved tuning in a real store: value and audit entry in one transaction, rollback, bounded history
with the dropped entries logged, and the reader role's view."""

from __future__ import annotations

import logging

import psycopg
import pytest

from secrag.db import database
from secrag.db.queries import Queries
from secrag.errors import ConfigError
from secrag.files.package_data import sql_dir
from secrag_cli.tuning_audit import apply_change, history, rollback
from serving.feedback.tuned_plans import read_thresholds
from serving.plans.plans_file import load_plans
from serving.settings.api import default_plans_file

SQL = sql_dir()


def tuned_thresholds(conn: psycopg.Connection, _: Queries) -> dict[str, float]:
    """What the API and `secrag tune report` read as the tuned values."""
    return read_thresholds(conn, Queries(SQL, "serving").tuned_values)


@pytest.fixture
def q() -> Queries:
    return Queries(SQL, "tuning")


def test_apply_then_rollback_restores_the_plans_files_value(db: psycopg.Connection, q: Queries) -> None:
    config = load_plans(default_plans_file())
    first = apply_change(db, q, config, "detection", 0.02, who="ana", reason="fewer weak hits")
    assert (first.old, first.old_tuned, first.new, first.new_tuned) == (0.0, False, 0.02, True)
    second = apply_change(db, q, config, "detection", 0.03, who="ben", reason="again")
    assert (second.old, second.old_tuned) == (0.02, True)
    assert tuned_thresholds(db, q) == {"detection": 0.03}
    back = rollback(db, q, config, second.id, who="ana", reason="too strict")
    assert (back.action, back.rolls_back, back.new, back.new_tuned) == ("rollback", second.id, 0.02, True)
    assert tuned_thresholds(db, q) == {"detection": 0.02}
    rollback(db, q, config, first.id, who="ana", reason="back to the file")
    assert tuned_thresholds(db, q) == {}  # the plans file's value serves again
    assert [e.action for e in history(db, q, 10)] == ["rollback", "rollback", "apply", "apply"]


def test_a_refused_change_writes_nothing(db: psycopg.Connection, q: Queries) -> None:
    config = load_plans(default_plans_file())
    with pytest.raises(ConfigError, match="safe bounds"):
        apply_change(db, q, config, "detection", 0.95, who="x", reason="r")
    with pytest.raises(ConfigError, match="reason"):
        apply_change(db, q, config, "detection", 0.01, who="x", reason=" ")
    with pytest.raises(ConfigError, match="unknown query type 'keyword'"):
        apply_change(db, q, config, "keyword", 0.01, who="x", reason="r")
    with pytest.raises(ConfigError, match="no tuning audit entry 41"):
        rollback(db, q, config, 41, who="x", reason="r")
    assert tuned_thresholds(db, q) == {} and history(db, q, 10) == []


def test_the_newest_entries_are_kept_and_older_ones_logged(
    db: psycopg.Connection, q: Queries, caplog: pytest.LogCaptureFixture
) -> None:
    config = load_plans(default_plans_file())
    keep = config.tuning.history
    assert keep >= 100
    with caplog.at_level(logging.INFO, logger="secrag_cli.tuning_audit"):
        for i in range(keep + 3):
            apply_change(db, q, config, "forensic", 0.001 * (i % 7), who="x", reason=f"r{i}")
    kept = history(db, q, 10_000)
    assert len(kept) == keep and kept[0].reason == f"r{keep + 2}" and kept[-1].reason == "r3"
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) == 3 and '"reason": "r0"' in dropped[0] and '"reason": "r2"' in dropped[2]


def test_the_reader_reads_values_not_who_tuned_them(db_url: str, db: psycopg.Connection, q: Queries) -> None:
    apply_change(db, q, load_plans(default_plans_file()), "detection", 0.02, who="ana", reason="r")
    with database.connect(db_url, autocommit=True) as conn:
        conn.execute("SET ROLE secrag_reader")
        assert conn.execute("SELECT query_type, value FROM tuned_value").fetchall() == [("detection", 0.02)]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT who FROM tuning_audit")
