"""The receiver's app: POST /hooks/github/{owner}/{name} (a repository's GitHub push and release webhooks, which
poke every source on it) and /hooks/feed/{source} (any signer of a feed), GET /metrics and /healthz. A delivery is
checked in this order, each refusal counted: a hook with a secret (else 404), a body under the cap (else 413, read
no further), a signature (else 401), a delivery id the hook has not seen (else 409); then a poke is recorded (202)
and the hook's oldest delivery ids beyond its retention are forgotten."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import psycopg
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST
from psycopg_pool import ConnectionPool
from starlette.concurrency import run_in_threadpool

from secrag.db import database
from secrag.db.queries import Queries
from secrag.settings import Settings

from .counters import HookCounters
from .signatures import Verdict, verify

log = logging.getLogger(__name__)

HOOKS_ROLE = "secrag_hooks"
GITHUB_EVENTS = frozenset({"push", "release"})  # what makes an upstream version: a commit or a release
MAX_HEADER_CHARS = 200  # a delivery id or event name longer than this is not one (the table's checks agree)


@dataclass(frozen=True)
class Form:
    """Where a sender puts its event, delivery id and signature."""

    event: str
    delivery: str
    signature: str


GITHUB_FORM = Form("X-GitHub-Event", "X-GitHub-Delivery", "X-Hub-Signature-256")
FEED_FORM = Form("X-Secrag-Event", "X-Secrag-Delivery", "X-Secrag-Signature-256")


class TooLarge(Exception):
    """The body passed the cap."""


def hooks_url(settings: Settings) -> str:
    return settings.hooks_database_url or database.with_user(database.database_url(settings), HOOKS_ROLE)


async def read_capped(request: Request, cap: int) -> bytes:
    """The body, refused before reading past `cap` bytes (a declared length over it is refused unread)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > cap):
        raise TooLarge
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > cap:
            raise TooLarge
    return bytes(body)


def _answer(counters: HookCounters, status: int, outcome: str, detail: str) -> JSONResponse:
    counters.count(outcome)
    return JSONResponse(status_code=status, content={"detail": detail, "kind": outcome})


def create_app(settings: Settings) -> FastAPI:
    """The receiver over the pokes table as secrag_hooks (its pool opened in the lifespan)."""
    secrets = {name: secret.get_secret_value().encode() for name, secret in settings.secrets().items()}
    queries = Queries(settings.sql_dir, "pokes")
    counters = HookCounters()
    pool: ConnectionPool = database.open_pool(
        hooks_url(settings), min_size=1, max_size=4, name="secrag-hooks", check=True, configure=_autocommit
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        pool.open(wait=False)
        try:
            yield
        finally:
            pool.close()

    app = FastAPI(title="secrag hooks", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    retention = {
        "keep_seconds": settings.hook_delivery_retention_seconds,
        "keep_count": settings.hook_delivery_ids_kept,
    }

    def record(hook: str, delivery: str, event: str) -> bool:
        """A poke, unless the hook saw this delivery id; then the hook's retention (ids beyond it forgotten)."""
        with pool.connection() as conn:
            cur = conn.execute(queries.insert_poke, {"hook": hook, "delivery_id": delivery, "event": event})
            if cur.rowcount != 1:
                return False
            conn.execute(queries.forget_deliveries, {"hook": hook, **retention})
            return True

    async def receive(request: Request, hook: str, form: Form, events: frozenset[str] | None) -> JSONResponse:
        secret = secrets.get(hook)
        if secret is None:
            return _answer(counters, 404, "unknown_source", "no webhook is configured for this repository or feed")
        try:
            body = await read_capped(request, settings.hook_max_body_bytes)
        except TooLarge:
            return _answer(counters, 413, "too_large", f"bodies are at most {settings.hook_max_body_bytes} bytes")
        verdict = verify(secret, body, request.headers.get(form.signature))
        if verdict is not Verdict.SIGNED:
            return _answer(counters, 401, verdict.value, f"{form.signature} is not this body's signature")
        delivery, event = request.headers.get(form.delivery, ""), request.headers.get(form.event, "feed")
        if not 0 < len(delivery) <= MAX_HEADER_CHARS or not 0 < len(event) <= MAX_HEADER_CHARS:
            return _answer(counters, 400, "invalid", f"{form.delivery} and {form.event} name the delivery")
        if events is not None and event not in events:
            return _answer(counters, 200, "ignored", f"{event} events do not poke a source")
        if not await run_in_threadpool(record, hook, delivery, event):
            return _answer(counters, 409, "replayed", "this delivery was received before")
        log.info("poked", extra={"hook": hook, "event": event, "delivery": delivery})
        return _answer(counters, 202, "accepted", f"{hook}'s sources will be probed on their sensors' next tick")

    @app.post("/hooks/github/{owner}/{name}", status_code=202)
    async def github(request: Request, owner: str, name: str) -> JSONResponse:
        """A repository's GitHub webhook (content type application/json); push and release poke its sources."""
        return await receive(request, f"{owner}/{name}".lower(), GITHUB_FORM, GITHUB_EVENTS)  # as GitHub: any case

    @app.post("/hooks/feed/{source}", status_code=202)
    async def feed(request: Request, source: str) -> JSONResponse:
        """A feed's signed POST: X-Secrag-Delivery and X-Secrag-Signature-256 as GitHub's headers."""
        return await receive(request, source, FEED_FORM, None)

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(counters.scrape(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _autocommit(conn: psycopg.Connection) -> None:
    conn.autocommit = True
