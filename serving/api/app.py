"""The FastAPI application factory: routers under /v1, the pool opened in the lifespan, MCP at /mcp."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio.to_thread
import psycopg
from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from psycopg_pool import ConnectionPool, PoolTimeout

from secrag.db import database
from secrag.db.migrations import latest_version
from secrag.db.queries import Queries
from secrag.models.registry import model_info
from secrag.net.url_policy import UrlPolicy
from serving.access.keys import load_api_keys
from serving.access.quotas import Gate
from serving.access.request_limits import RequestLimits
from serving.access.sessions import ReaderSessions, querylog_url, reader_url
from serving.api import openapi
from serving.api.deps import Slot
from serving.api.routes import (
    API_PREFIX,
    changes,
    coverage,
    docs,
    health,
    layers,
    lookup,
    mapping,
    plans,
    search,
    sources,
    stats,
)
from serving.api.routes import metrics as metrics_route
from serving.api.routes.metrics import metrics_digest
from serving.api.warm_up import warm_up
from serving.contract import errors
from serving.contract.error_responses import GATED_STATUSES, error_responses
from serving.contract.limits import AnswerSizeLimit, BodySizeLimit
from serving.coverage.log_sources import shipped_log_sources
from serving.feedback.querylog import QueryLog
from serving.feedback.tuned_plans import TunedPlans, stored_thresholds
from serving.observability.metrics import MetricsMiddleware
from serving.observability.prometheus import Exposition
from serving.plans.plans_file import load_plans
from serving.plans.telemetry import shipped_telemetry
from serving.reads.upstream import Refetcher
from serving.search.encoder import QueryEncoder, shared_encoder
from serving.search.search_file import load_search_config
from serving.search.statements import compose
from serving.service import Service
from serving.settings import ServingSettings, get_serving_settings

log = logging.getLogger(__name__)
DOCS_ASSETS = "/docs-assets"  # Swagger UI's script, styles and icon (fastapi-offline)
_GATED = error_responses(*GATED_STATUSES)


def open_reader_pool(url: str, settings: ServingSettings, sessions: ReaderSessions) -> ConnectionPool:
    """Connections logged in as the read-only role, with a statement timeout and read-only transactions.

    Connections are checked before use and failed connects are retried in the background, so the
    API answers 503 within `pool_timeout` while the database is down and recovers by itself. Each
    connection's session settings are reset when it comes back from a request.
    """
    pool = database.open_pool(
        url,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        timeout=settings.pool_timeout,
        name="secrag-serving",
        configure=sessions.configure,
        reset=sessions.reset,
        check=True,
        # psycopg_pool doubles its reconnect delay without a cap; ending each backoff run after a few
        # seconds (the next request starts a fresh one at once) keeps recovery within seconds of the
        # database coming back, however long it was away.
        reconnect_timeout=settings.pool_reconnect_timeout,
        connect_timeout=2,
    )
    pool.open(wait=False)
    return pool


def _serving_model(pool: ConnectionPool, queries: Queries, settings: ServingSettings) -> str:
    """The configured serving model, else the active one, else the pipeline's configured model."""
    if settings.serving_model:
        return model_info(settings.serving_model).model_id  # ConfigError naming the known models
    fallback = settings.embedding_model
    try:
        with pool.connection(timeout=5.0) as conn:
            row = conn.execute(queries.active_model).fetchone()
        return str(row[0]) if row else fallback
    except (PoolTimeout, psycopg.Error) as exc:
        log.warning("cannot read the active embedding model; using %s", fallback, extra={"error": type(exc).__name__})
        return fallback


def _encoder_factory(settings: ServingSettings) -> Callable[[str], QueryEncoder]:
    def make(model_id: str) -> QueryEncoder:
        return shared_encoder(
            model_id,
            settings.torch_threads,
            backend=settings.query_encoder,
            encoder_threads=settings.query_encoder_threads,
            cache_size=settings.query_cache_size,
            cache_dir=settings.models_dir,
        )

    return make


def start_service(settings: ServingSettings, metrics: Exposition, url_policy: UrlPolicy | None = None) -> Service:
    """Open the pool, load the active model's encoder, read the search config."""
    queries = Queries(settings.sql_dir, "serving")
    sessions = ReaderSessions(queries, settings)
    login = reader_url(settings)
    sessions.check_login(login, settings.connect_timeout)  # a privileged login stops the start here
    query_log = None
    if settings.query_log:
        query_log = QueryLog(querylog_url(settings), queries, with_text=settings.query_log_text)
        query_log.open(settings.connect_timeout)  # so does a query log on a read-only standby
    pool = open_reader_pool(login, settings, sessions)
    make_encoder = _encoder_factory(settings)
    encoder = make_encoder(_serving_model(pool, queries, settings))
    service = Service(
        settings=settings,
        pool=pool,
        encoder=encoder,
        queries=queries,
        statements=compose(queries, encoder.model_id, encoder.dimensions),
        search_config=load_search_config(settings.search_config),
        metrics=metrics,
        refetcher=Refetcher.from_settings(settings, url_policy),
        sessions=sessions,
        query_log=query_log,
        make_encoder=make_encoder,
    )
    service.catalog.load_vocabulary()  # a store-wide read: at start-up, never inside a request
    if settings.warm_up:
        warm_up(service.searcher)
    return service


def stop_service(service: Service) -> None:
    service.side_legs.close()
    if service.sentence is not None:
        service.sentence.close()
    service.source_vectors.close()
    service.ann_index.close()
    service.pool.close()
    if service.query_log is not None:
        service.query_log.close()


def create_app(settings: ServingSettings | None = None, *, url_policy: UrlPolicy | None = None) -> FastAPI:
    """The secrag API. Nothing connects until the lifespan starts.

    url_policy replaces the outbound URL policy of the upstream refetch (default: the settings').
    """
    settings = settings or get_serving_settings()
    metrics = Exposition()
    api_keys = load_api_keys(settings.api_keys_file)
    gate = Gate(api_keys, settings)
    plans_config = load_plans(settings.plans_file)  # validated at start-up: a bad file fails here
    tuned_plans = TunedPlans(
        plans_config, read=lambda: stored_thresholds(app.state.service.pool, app.state.service.queries)
    )
    shipped_telemetry()  # the logsource -> schema table of the query-writing plan, likewise
    shipped_log_sources()  # coverage's ATT&CK log source -> rule sets and schemas table, likewise
    mcp_server = None
    mcp_app = None
    if settings.mcp_enabled:
        from serving.mcp.calls import transport_security
        from serving.mcp.tools import build_mcp

        mcp_server = build_mcp(
            lambda: app.state.service,
            gate,
            tuned_plans.current,
            limits=RequestLimits.from_settings(settings),
            in_flight=metrics.in_flight,  # with /v1's (MetricsMiddleware): what maps' idle check and side legs read
        )
        mcp_app = mcp_server.streamable_http_app(
            streamable_http_path="/",
            stateless_http=True,
            json_response=True,
            transport_security=transport_security(settings.mcp_allowed_hosts),
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await anyio.to_thread.run_sync(start_service, settings, metrics, url_policy)
        app.state.service = service
        try:
            if mcp_server is not None:
                async with mcp_server.session_manager.run():
                    yield
            else:
                yield
        finally:
            await anyio.to_thread.run_sync(stop_service, service)

    app = FastAPIOffline(  # /docs serves Swagger UI from the package, not a CDN: it works offline
        title="secrag",
        version="1",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
        static_url=DOCS_ASSETS,
        description="Read-only search over security knowledge (ATT&CK, Sigma, Atomic, KEV, ...).",
        generate_unique_id_function=openapi.operation_id,
    )
    app.state.settings = settings
    app.state.api_keys = api_keys
    app.state.gate = gate
    app.state.plans = tuned_plans
    app.state.metrics = metrics
    app.state.metrics_digest = metrics_digest(settings.metrics_key)  # a weak key stops the start here
    app.state.expected_schema_version = latest_version(settings.sql_dir)
    errors.install(app)
    openapi.install(app)
    # Every operation: a known (or allowed anonymous) caller within its rate, holding one of its slots;
    # the probes outside /v1 take none, so a flood of requests cannot make /readyz fail.
    for module in (search, plans, mapping, coverage, layers, lookup, docs, sources, stats, changes):
        app.include_router(module.router, dependencies=[Slot], responses=_GATED)
    app.include_router(health.router)
    if settings.metrics_enabled:
        app.include_router(metrics_route.router)
    if mcp_app is not None:
        app.mount("/mcp", mcp_app)
    app.add_middleware(AnswerSizeLimit, max_bytes=settings.max_answer_bytes, prefix=API_PREFIX)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=metrics, counted_prefix=API_PREFIX)
    return app
