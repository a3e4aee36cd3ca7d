"""GET /v1/sources."""

from __future__ import annotations

from fastapi import APIRouter

from serving.api.deps import PrincipalDep, SourceReadsDep
from serving.api.routes import API_PREFIX
from serving.contract.responses import SourcesResponse

router = APIRouter(prefix=API_PREFIX, tags=["sources"])


@router.get("/sources", response_model=SourcesResponse)
def list_sources(sources: SourceReadsDep, principal: PrincipalDep) -> SourcesResponse:
    """Every source: upstream, served version, last check and sync, record count, state, last error."""
    return sources.sources(principal)
