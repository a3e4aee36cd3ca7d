"""The API operations in flight: counted by the metrics middleware for /v1 paths only, shown on /metrics."""

from __future__ import annotations

import asyncio

from starlette.types import Message, Receive, Scope, Send

from serving.observability.metrics import MetricsMiddleware
from serving.observability.prometheus import Exposition


def test_the_gauge_reads_the_count() -> None:
    exposition = Exposition()
    with exposition.in_flight.counting(), exposition.in_flight.counting():
        assert exposition.in_flight() == 2
        assert b"secrag_http_requests_in_flight 2.0" in exposition.scrape()
    assert exposition.in_flight() == 0


def seen_in_flight(path: str, root_path: str = "", *, fails: bool = False) -> tuple[int, int]:
    """The count during and after one request to `path` through the middleware."""
    exposition = Exposition()
    during: list[int] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        during.append(exposition.in_flight())
        if fails:
            raise RuntimeError("boom")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        pass

    middleware = MetricsMiddleware(app, exposition, counted_prefix="/v1")
    scope: Scope = {"type": "http", "path": root_path + path, "root_path": root_path, "method": "GET"}
    try:
        asyncio.run(middleware(scope, receive, send))
    except RuntimeError:
        assert fails
    return during[0], exposition.in_flight()


def test_api_operations_count_while_they_run() -> None:
    assert seen_in_flight("/v1/search") == (1, 0)
    assert seen_in_flight("/v1/search", root_path="/secrag") == (1, 0)
    assert seen_in_flight("/v1/search", fails=True) == (1, 0)  # a failed request leaves the count


def test_probes_metrics_and_mcp_do_not_count() -> None:
    for path in ("/healthz", "/readyz", "/metrics", "/mcp/", "/v1"):
        assert seen_in_flight(path) == (0, 0)
