"""GET /metrics: Prometheus' text format (serving/observability/prometheus.py); unversioned and, like the
probes, open."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from serving.access.replica import pooled_lag

router = APIRouter(tags=["health"])
POOL_STATS = ("pool_size", "pool_available", "requests_waiting", "requests_num", "requests_errors")


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    exposition = request.app.state.metrics
    service = getattr(request.app.state, "service", None)
    if service is None:  # not started yet: requests only
        return Response(exposition.scrape(), media_type=CONTENT_TYPE_LATEST)
    lag = pooled_lag(service.pool, service.queries)  # one cheap read per scrape, none per search
    exposition.replica(lag.standby if lag else None, lag.seconds if lag else None)
    body = exposition.scrape(
        pool={k: v for k, v in service.pool.get_stats().items() if k in POOL_STATS},
        encoder=service.searcher.encoder.cache_info(),
        results=service.results.info(),
        model=service.searcher.encoder.model_id,
        vectors=service.source_vectors.info(),
    )
    return Response(body, media_type=CONTENT_TYPE_LATEST)
