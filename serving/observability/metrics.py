"""Every HTTP request recorded once, in the Prometheus registry (serving/observability/prometheus.py), under
the template of the route Starlette matched (`scope["route"]`)."""

from __future__ import annotations

import time
from contextlib import nullcontext

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serving.contract.errors import ERROR_KEY
from serving.observability.prometheus import Exposition

UNMATCHED = "unmatched"  # the one label of every path no route matched (unbounded paths stay out)


class MetricsMiddleware:
    """Times every HTTP request and records it under its route template (e.g. /v1/docs/{doc_id})."""

    def __init__(self, app: ASGIApp, metrics: Exposition, counted_prefix: str | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.counted_prefix = counted_prefix  # the paths counted in flight (metrics.in_flight): the API's
        # operations, not the probes, /metrics or a held-open MCP stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        state = scope.setdefault("state", {})
        root_path = scope.get("root_path", "")

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        counted = self.counted_prefix is not None and in_api(scope, root_path, self.counted_prefix)
        try:
            with self.metrics.in_flight.counting() if counted else nullcontext():
                await self.app(scope, receive, send_wrapper)
        finally:
            template = route_template(scope, root_path)
            error = state.get(ERROR_KEY) or ("internal" if status >= 500 else None)
            self.metrics.record(template, status, (time.perf_counter() - started) * 1000, error)


def in_api(scope: Scope, root_path: str, prefix: str) -> bool:
    """Whether the request's path (after the root path it is served under) is one of the API's (`prefix`/...)."""
    path = str(scope.get("path", ""))
    if root_path and path.startswith(root_path):
        path = path[len(root_path) :]
    return path.startswith(prefix + "/")


def route_template(scope: Scope, root_path: str = "") -> str:
    """The path template of the route the router matched (Starlette sets scope["route"]), e.g.
    /v1/docs/{doc_id} (converters dropped); a mounted app's prefix (/mcp: the mount extends the root
    path given, `root_path`); UNMATCHED when nothing matched. FastAPI keeps an included router's
    prefix out of its routes' paths, so the routers carry their prefix (serving/api/routes)."""
    mounted = str(scope.get("root_path", ""))
    if mounted != root_path and mounted.startswith(root_path):
        return mounted[len(root_path) :]
    return getattr(scope.get("route"), "path_format", None) or UNMATCHED
