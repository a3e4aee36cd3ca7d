"""A download's limits: Retry-After read as seconds or an HTTP date and capped, and a budget that only
shrinks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from secrag.net.download_limits import Budget, retry_after


def test_retry_after_reads_seconds_and_dates_and_caps_them() -> None:
    assert retry_after("7", 60.0) == 7.0
    assert retry_after("600", 60.0) == 60.0
    assert retry_after("-3", 60.0) == 0.0
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25.0 <= (retry_after(when, 60.0) or 0.0) <= 30.0
    assert retry_after(None, 60.0) is None and retry_after("soon", 60.0) is None


def test_each_operation_gets_at_most_half_the_budget() -> None:
    budget = Budget.start(10.0)
    assert 0 < budget.remaining() <= 10.0
    assert budget.op_timeout() == 5.0
    spent = Budget(10.0, budget.deadline - 10.0)  # the deadline has passed
    assert spent.remaining() < 0 and spent.op_timeout() == 0.01
