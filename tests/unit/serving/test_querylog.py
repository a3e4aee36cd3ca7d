"""The query log records only the query classes of serving/contract/query_classes.py (no database needed to refuse),
and checks at start-up that its database takes writes."""

from __future__ import annotations

import pytest

from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.feedback.querylog import QueryLog


def test_an_unknown_query_class_is_refused_before_any_write() -> None:
    log = QueryLog("postgresql:///nowhere", Queries(sql_dir(), "serving"), with_text=False)
    with pytest.raises(ValueError, match="'weather' is not in serving/contract/query_classes.py"):
        log.write(
            endpoint="search",
            query_type="weather",
            query_text=None,
            top_score=None,
            result_count=0,
            latency_ms=1.0,
            details={},
        )


def test_an_unreachable_query_log_database_only_warns_at_start_up(caplog: pytest.LogCaptureFixture) -> None:
    log = QueryLog("postgresql://nobody@/secrag?host=/nonexistent", Queries(sql_dir(), "serving"), with_text=False)
    log.refuse_standby(connect_timeout=1)  # no ConfigError: whether it is a standby is unknown, writes will tell
    assert "cannot check the query log's database yet" in caplog.text
