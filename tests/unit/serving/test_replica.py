"""A replica's lag against SECRAG_REPLICA_MAX_LAG_SECONDS: a primary never lags, an unknown lag is too much, and
a probe that cannot read the lag reports None instead of raising (the database parts: tests/integration/serving/
test_replica.py)."""

from __future__ import annotations

import pytest
from psycopg_pool import ConnectionPool

from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.access.replica import ReplicaLag, lag_limit, pooled_lag
from serving.settings import ServingSettings


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


def test_a_replica_has_a_default_maximum_lag_and_zero_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SECRAG_REPLICA_MAX_LAG_SECONDS", raising=False)
    default = ServingSettings(_env_file=None).replica_max_lag_seconds  # type: ignore[call-arg]
    assert default == 30.0
    stopped = ReplicaLag(standby=True, seconds=31.0)  # a standby that stopped replaying half a minute ago
    assert stopped.exceeds(lag_limit(default))
    off = ServingSettings(_env_file=None, replica_max_lag_seconds=0).replica_max_lag_seconds  # type: ignore[call-arg]
    assert lag_limit(off) is None and not stopped.exceeds(lag_limit(off))
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        ServingSettings(_env_file=None, replica_max_lag_seconds=-1)  # type: ignore[call-arg]
