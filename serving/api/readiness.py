"""GET /readyz's checks: the database answers, its schema is at the migration this code expects, and
the query model is loaded."""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from serving.service import Service

log = logging.getLogger(__name__)


def readiness(service: Service, expected_version: int) -> dict[str, Any]:
    """Database reachable, schema at the expected migration, query model loaded."""
    checks = {"database": False, "schema": False, "model": service.searcher.encoder.loaded}
    version: int | None = None
    try:
        with service.pool.connection(timeout=1.0) as conn:
            row = conn.execute(service.queries.schema_version).fetchone()
            checks["database"] = True
            version = int(row[0]) if row else 0
            checks["schema"] = version == expected_version
    except (psycopg.Error, Exception) as exc:  # noqa: BLE001 - readiness reports, never raises
        log.info("readiness check failed", extra={"error": type(exc).__name__})
    return {
        "status": "ready" if all(checks.values()) else "not ready",
        "checks": checks,
        "schema_version": version,
        "expected_schema_version": expected_version,
        "model": service.searcher.encoder.model_id if service.searcher.encoder.loaded else None,
    }
