"""A replica's lag against SECRAG_REPLICA_MAX_LAG_SECONDS: a primary never lags, an unknown lag is too much, and
a probe that cannot read the lag reports None instead of raising (the database parts: tests/integration/serving/
test_replica.py)."""

from __future__ import annotations

import pytest
from psycopg_pool import ConnectionPool

from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.access.replica import ReplicaLag, pooled_lag


@pytest.mark.parametrize(
    ("lag", "max_seconds", "exceeds"),
    [
        (ReplicaLag(standby=False, seconds=0.0), 1.0, False),
        (ReplicaLag(standby=True, seconds=0.0), 1.0, False),
        (ReplicaLag(standby=True, seconds=1.0), 1.0, False),  # at the limit is within it
        (ReplicaLag(standby=True, seconds=1.5), 1.0, True),
        (ReplicaLag(standby=True, seconds=None), 1.0, True),  # no transaction replayed yet: unknown
        (ReplicaLag(standby=True, seconds=3600.0), None, False),  # no limit set
    ],
)
def test_exceeds(lag: ReplicaLag, max_seconds: float | None, exceeds: bool) -> None:
    assert lag.exceeds(max_seconds) is exceeds


def test_a_pool_that_does_not_answer_gives_no_reading() -> None:
    pool = ConnectionPool("postgresql:///nowhere", open=False)  # never opened: every checkout fails at once
    assert pooled_lag(pool, Queries(sql_dir(), "serving"), timeout=0.1) is None
