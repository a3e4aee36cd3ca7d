"""GET /v1/stats."""

from __future__ import annotations

from fastapi import APIRouter

from serving.api.deps import MetricsDep, ModelDep, PrincipalDep, SourceReadsDep
from serving.api.routes import API_PREFIX
from serving.contract.responses import StatsResponse

router = APIRouter(prefix=API_PREFIX, tags=["stats"])


@router.get("/stats", response_model=StatsResponse)
def get_stats(sources: SourceReadsDep, model: ModelDep, metrics: MetricsDep, principal: PrincipalDep) -> StatsResponse:
    """Exact counts per source and model, versions, freshness, index sizes, request latency percentiles."""
    return StatsResponse.model_validate(sources.stats(principal, model.searcher, metrics.summary()))
