"""FastAPI dependencies as named Annotated aliases: the caller, its slot, and the parts of the service a route
uses (serving/service.py composes them once in the lifespan).

Every dependency is `async def`: FastAPI runs a plain `def` dependency in its thread pool, a hop to a worker
thread and back for each, and these only read memory (attributes, the key table, the in-memory rate limiter
and slot counts). A search took eleven such hops; they cost 1.6 ms of each request's 3.4 ms outside the search
at one client. What may read the store (the active model's look, the tuned plans) goes to the thread pool
(tests/unit/serving/test_deps.py keeps the rest async)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.concurrency import run_in_threadpool
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from serving.access.keys import Principal
from serving.access.quotas import Caller, Gate
from serving.access.request_limits import RequestLimits
from serving.coverage.counts import CoverageReads
from serving.feedback.request_log import RequestLog
from serving.layers.screen import LayerReads
from serving.observability.prometheus import Exposition
from serving.plans.reads import PlanReads
from serving.reads.artefacts import ArtefactLookup
from serving.reads.changes import ChangeFeed
from serving.reads.documents import Reads
from serving.reads.sources import SourceReads
from serving.search.catalog import Catalog
from serving.search.searcher import Searcher
from serving.search.serving_model import ServingModel
from serving.service import Service
from serving.settings import ServingSettings

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key (or use Bearer).")
_bearer = HTTPBearer(auto_error=False, description="API key as a bearer token.")


async def get_service(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


async def get_settings_dep(request: Request) -> ServingSettings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_metrics(request: Request) -> Exposition:
    return request.app.state.metrics  # type: ignore[no-any-return]


async def get_gate(request: Request) -> Gate:
    return request.app.state.gate  # type: ignore[no-any-return]


async def presented_key(
    api_key: Annotated[str | None, Security(_api_key_header)] = None,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> str | None:
    """The key a request presents: X-API-Key, else Authorization: Bearer (the API's and /metrics')."""
    return api_key or (bearer.credentials if bearer else None)


async def get_caller(
    request: Request, gate: Annotated[Gate, Depends(get_gate)], key: Annotated[str | None, Depends(presented_key)]
) -> Caller:
    """The caller from X-API-Key or Authorization: Bearer, admitted by its request rate."""
    address = request.client.host if request.client else None
    return gate.caller(key, address)


async def get_principal(caller: Annotated[Caller, Depends(get_caller)]) -> Principal:
    """What the caller may see; anonymous callers see public documents only."""
    return caller.principal


async def request_slot(
    gate: Annotated[Gate, Depends(get_gate)], caller: Annotated[Caller, Depends(get_caller)]
) -> AsyncIterator[None]:
    """One of the caller's concurrent-request slots, held for the request (every /v1 operation)."""
    with gate.slot(caller):
        yield


ServiceDep = Annotated[Service, Depends(get_service)]  # the probes: readiness checks the whole
SettingsDep = Annotated[ServingSettings, Depends(get_settings_dep)]
MetricsDep = Annotated[Exposition, Depends(get_metrics)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
CallerDep = Annotated[Caller, Depends(get_caller)]
GateDep = Annotated[Gate, Depends(get_gate)]
Slot = Depends(request_slot)


async def get_catalog(service: ServiceDep) -> Catalog:
    return service.catalog


async def get_model(service: ServiceDep) -> ServingModel:
    return service.model


ModelDep = Annotated[ServingModel, Depends(get_model)]


async def get_searcher(model: ModelDep) -> Searcher:
    """The serving model's searcher, after a look at the active model (switched when the pipeline activates
    another; the look reads the store every few seconds, in the thread pool); a read that only reports the model
    (GET /v1/stats) takes `ModelDep` and its searcher as is."""
    if model.follow_due():
        await run_in_threadpool(model.follow)
    return model.searcher


async def get_reads(service: ServiceDep) -> Reads:
    return service.reads


async def get_limits(service: ServiceDep) -> RequestLimits:
    return service.limits


async def get_change_feed(service: ServiceDep) -> ChangeFeed:
    return service.change_feed


async def get_artefacts(service: ServiceDep) -> ArtefactLookup:
    return service.artefacts


async def get_source_reads(service: ServiceDep) -> SourceReads:
    return service.source_reads


async def get_coverage(service: ServiceDep) -> CoverageReads:
    return service.coverage


async def get_layers(service: ServiceDep) -> LayerReads:
    return service.layers


async def get_request_log(service: ServiceDep) -> RequestLog:
    return service.request_log


CatalogDep = Annotated[Catalog, Depends(get_catalog)]
SearcherDep = Annotated[Searcher, Depends(get_searcher)]
ReadsDep = Annotated[Reads, Depends(get_reads)]
LimitsDep = Annotated[RequestLimits, Depends(get_limits)]
ChangeFeedDep = Annotated[ChangeFeed, Depends(get_change_feed)]
ArtefactsDep = Annotated[ArtefactLookup, Depends(get_artefacts)]
SourceReadsDep = Annotated[SourceReads, Depends(get_source_reads)]
CoverageDep = Annotated[CoverageReads, Depends(get_coverage)]
LayersDep = Annotated[LayerReads, Depends(get_layers)]
RequestLogDep = Annotated[RequestLog, Depends(get_request_log)]


async def get_plan_reads(searcher: SearcherDep, catalog: CatalogDep, reads: ReadsDep, limits: LimitsDep) -> PlanReads:
    """What a plan reads: the searcher, the catalog's cached source facts, documents and the limits."""
    return PlanReads(searcher, catalog, reads, limits)


PlanReadsDep = Annotated[PlanReads, Depends(get_plan_reads)]
