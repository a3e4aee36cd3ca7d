"""Request counts and latency percentiles since start (in memory, per route template)."""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, deque
from datetime import UTC, datetime

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serving.contract.errors import ERROR_KEY
from serving.observability.prometheus import Exposition

WINDOW = 10_000  # latencies kept per route for the percentiles
UNMATCHED = "unmatched"  # the one label of every path no route matched (unbounded paths stay out)


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        return None
    rank = max(1, min(len(sorted_values), math.ceil(q / 100 * len(sorted_values))))
    return sorted_values[rank - 1]


class Metrics:
    """Thread-safe counters; `summary()` feeds /v1/stats."""

    def __init__(self) -> None:
        self.since = datetime.now(UTC)
        self._lock = threading.Lock()
        self._latency: dict[str, deque[float]] = {}
        self._counts: Counter[str] = Counter()
        self._status: Counter[str] = Counter()
        self.prometheus = Exposition()  # the same requests, for GET /metrics

    def record(self, route: str, status: int, ms: float, error: str | None = None) -> None:
        self.prometheus.record(route, status, ms, error)
        with self._lock:
            self._latency.setdefault(route, deque(maxlen=WINDOW)).append(ms)
            self._counts[route] += 1
            self._status[f"{status // 100}xx"] += 1

    def summary(self) -> dict[str, object]:
        with self._lock:
            by_route = {
                route: self._describe(self._counts[route], list(values)) for route, values in self._latency.items()
            }
            everything = [v for values in self._latency.values() for v in values]
            return {
                "since": self.since,
                "total": self._describe(sum(self._counts.values()), everything),
                "by_route": by_route,
                "by_status": dict(self._status),
            }

    @staticmethod
    def _describe(count: int, values: list[float]) -> dict[str, object]:
        values.sort()
        return {
            "count": count,
            "p50_ms": percentile(values, 50),
            "p95_ms": percentile(values, 95),
            "p99_ms": percentile(values, 99),
        }


class MetricsMiddleware:
    """Times every HTTP request and records it under its route template (e.g. /v1/docs/{doc_id})."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

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

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            template = route_template(scope, root_path)
            error = state.get(ERROR_KEY) or ("internal" if status >= 500 else None)
            self.metrics.record(template, status, (time.perf_counter() - started) * 1000, error)


def route_template(scope: Scope, root_path: str = "") -> str:
    """The path template of the route the router matched (Starlette sets scope["route"]), e.g.
    /v1/docs/{doc_id} (converters dropped); a mounted app's prefix (/mcp: the mount extends the root
    path given, `root_path`); UNMATCHED when nothing matched. FastAPI keeps an included router's
    prefix out of its routes' paths, so the routers carry their prefix (serving/api/routes)."""
    mounted = str(scope.get("root_path", ""))
    if mounted != root_path and mounted.startswith(root_path):
        return mounted[len(root_path) :]
    return getattr(scope.get("route"), "path_format", None) or UNMATCHED
