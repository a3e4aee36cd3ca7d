"""GET /metrics: the API's figures in Prometheus' text format (prometheus-client), one registry per app.

Requests by route template and status, their latency histogram, errors by kind, searches by mode
and query shape with their in-process time, build information, and at each scrape the state of the
reader pool, the query encoder (its hit ratio included), the result cache and the serving model.
One API process per registry: with several workers, scrape each (a Kubernetes pod, a compose
replica) rather than a shared port.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, generate_latest

from secrag.version import version

# Seconds: searches take 10-60 ms here, plans and refetches up to seconds.
BUCKETS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


class Exposition:
    """The app's metrics (requests recorded by serving.observability.metrics.Metrics) and the scrape-time gauges."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "secrag_http_requests", "HTTP requests served", ["route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "secrag_http_request_duration_seconds",
            "HTTP request latency",
            ["route"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "secrag_http_errors", "Error responses by route and kind", ["route", "kind"], registry=self.registry
        )
        self.searches = Counter(
            "secrag_searches", "Searches by mode and query shape", ["mode", "query_type"], registry=self.registry
        )
        self.search_time = Histogram(
            "secrag_search_duration_seconds",
            "In-process search time (encoding, PostgreSQL, fusion) by mode",
            ["mode"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.build = Info("secrag_build", "secrag version and runtime", registry=self.registry)
        self.build.info({"version": version(), "python": platform.python_version()})
        self.model = Gauge(
            "secrag_serving_model", "The model queries are encoded with (1)", ["model"], registry=self.registry
        )
        self.pool = Gauge("secrag_db_pool", "Reader pool (psycopg_pool stats)", ["stat"], registry=self.registry)
        self.encoder = Gauge("secrag_query_encoder", "Query encoder cache and runs", ["stat"], registry=self.registry)
        self.results = Gauge("secrag_result_cache", "Search result cache", ["stat"], registry=self.registry)

    def record(self, route: str, status: int, ms: float, error: str | None = None) -> None:
        self.requests.labels(route=route, status=str(status)).inc()
        self.latency.labels(route=route).observe(ms / 1000)
        if error is not None:
            self.errors.labels(route=route, kind=error).inc()

    def search(self, mode: str, query_type: str, took_ms: float) -> None:
        self.searches.labels(mode=mode, query_type=query_type).inc()
        self.search_time.labels(mode=mode).observe(took_ms / 1000)

    def scrape(
        self,
        pool: Mapping[str, Any] | None = None,
        encoder: Mapping[str, Any] | None = None,
        results: Mapping[str, Any] | None = None,
        model: str | None = None,
    ) -> bytes:
        """The text exposition, the gauges set from the running service's figures (none before it started)."""
        if model is not None:
            self.model.clear()
            self.model.labels(model=model).set(1)
        encoder = dict(encoder or {})
        looked_up = (encoder.get("hits") or 0) + (encoder.get("misses") or 0)
        if looked_up and isinstance(encoder.get("hits"), int):
            encoder["hit_ratio"] = encoder["hits"] / looked_up
        for gauge, figures in ((self.pool, pool), (self.encoder, encoder), (self.results, results)):
            for stat, value in (figures or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    gauge.labels(stat=stat).set(value)
        return generate_latest(self.registry)
