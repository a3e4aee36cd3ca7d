"""GET /readyz's checks: the database answers, its schema is at the migration this code expects, the
query model is loaded, and (unless SECRAG_REPLICA_MAX_LAG_SECONDS is 0) a standby is not too far behind."""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from serving.access.replica import ReplicaLag, lag_limit, read_lag
from serving.service import Service

log = logging.getLogger(__name__)


def readiness(service: Service, expected_version: int) -> dict[str, Any]:
    """Database reachable, schema at the expected migration, query model loaded, replica lag within bounds."""
    max_lag = lag_limit(service.settings.replica_max_lag_seconds)
    checks = {"database": False, "schema": False, "model": service.searcher.encoder.loaded}
    if max_lag is not None:
        checks["replica_lag"] = False
    version: int | None = None
    lag: ReplicaLag | None = None
    try:
        with service.pool.connection(timeout=1.0) as conn:
            row = conn.execute(service.queries.schema_version).fetchone()
            checks["database"] = True
            version = int(row[0]) if row else 0
            checks["schema"] = version == expected_version
            lag = read_lag(conn, service.queries)
    except (psycopg.Error, Exception) as exc:  # noqa: BLE001 - readiness reports, never raises
        log.info("readiness check failed", extra={"error": type(exc).__name__})
    if lag is not None:
        service.metrics.replica(lag.standby, lag.seconds)
        if max_lag is not None:
            checks["replica_lag"] = not lag.exceeds(max_lag)
    return {
        "status": "ready" if all(checks.values()) else "not ready",
        "checks": checks,
        "schema_version": version,
        "expected_schema_version": expected_version,
        "model": service.searcher.encoder.model_id if service.searcher.encoder.loaded else None,
        "replica": None
        if lag is None
        else {"standby": lag.standby, "lag_seconds": lag.seconds, "max_lag_seconds": max_lag},
    }
