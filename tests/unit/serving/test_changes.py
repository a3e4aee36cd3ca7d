"""`since` of the change feed: an ISO 8601 time (UTC without an offset), or else a source version."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from serving.reads.changes import since_time


@pytest.mark.parametrize(
    "since, expected",
    [
        ("2026-11-20T08:00:00Z", datetime(2026, 11, 20, 8, tzinfo=UTC)),
        ("2026-11-20T08:00:00", datetime(2026, 11, 20, 8, tzinfo=UTC)),
        ("2026-11-20T09:00:00+01:00", datetime(2026, 11, 20, 9, tzinfo=timezone(timedelta(hours=1)))),
        ("2026-11-20", datetime(2026, 11, 20, tzinfo=UTC)),
        ("2026.08.07", None),  # a KEV catalog version
        ("v8.17.4", None),  # a release tag
        ("5f3b2c1e9a7d4b6c8e0f1a2b3c4d5e6f7a8b9c0d", None),  # a commit
    ],
)
def test_since_is_a_time_or_a_version(since: str, expected: datetime | None) -> None:
    assert since_time(since) == expected
