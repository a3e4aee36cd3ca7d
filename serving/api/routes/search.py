"""POST /v1/search."""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks, Response

from serving.api.deps import LimitsDep, MetricsDep, PrincipalDep, RequestLogDep, SearcherDep
from serving.api.routes import API_PREFIX, serialised
from serving.contract.requests import SCORE_SCALES, SearchRequest
from serving.contract.responses import SearchResponse

router = APIRouter(prefix=API_PREFIX, tags=["search"])


@router.post(
    "/search",
    response_model=SearchResponse,
    description=(
        "Hybrid (default), full-text, vector or fuzzy search over the chunks of the documents the caller may "
        "see. Exact identifiers (T1003, T1003.001, CVE-2021-44228, CAPEC-66, AML.T0051, D3-AL, rule UUIDs) put "
        "the document with that id first, and a file hash or file name (certutil.exe, a LOLDrivers SHA-256) the "
        "records holding it (GET /v1/lookup). " + SCORE_SCALES
    ),
)
def search(
    body: SearchRequest,
    searcher: SearcherDep,
    limits: LimitsDep,
    log: RequestLogDep,
    metrics: MetricsDep,
    principal: PrincipalDep,
    background: BackgroundTasks,
) -> Response:
    limits.check_search(body)
    response = searcher.search(body, principal)
    metrics.search(body.mode, response.query_type, response.took_ms)
    if log.enabled:
        background.add_task(log.search, body, response)
    return serialised(response)
