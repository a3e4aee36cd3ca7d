"""Liveness and readiness probes (unversioned, outside /v1)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from serving.api.deps import ServiceDep
from serving.api.readiness import readiness
from serving.contract.responses import Health, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    """The process is up."""
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
def readyz(request: Request, service: ServiceDep) -> JSONResponse:
    """Database reachable, schema at the expected migration, query model loaded, and a standby no further
    behind its primary than SECRAG_REPLICA_MAX_LAG_SECONDS (0: no limit) (503 otherwise);
    `replica` says whether the API reads a standby and its lag."""
    report = readiness(service, request.app.state.expected_schema_version)
    return JSONResponse(
        status_code=200 if report["status"] == "ready" else 503, content=Readiness.model_validate(report).model_dump()
    )
