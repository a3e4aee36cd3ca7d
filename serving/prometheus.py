"""GET /metrics: the API's figures in Prometheus' text format (prometheus-client), one registry per app.

Requests by route template, method class and status, their latency histogram, and at each scrape the
state of the reader pool, the query encoder and the result cache. One API process per registry: with
several workers, scrape each (a Kubernetes pod, a compose replica) rather than a shared port.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Seconds: searches take 10-60 ms here, plans and refetches up to seconds.
BUCKETS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


class Exposition:
    """The app's metrics (requests recorded by serving.metrics.Metrics) and the scrape-time gauges."""

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
        self.pool = Gauge("secrag_db_pool", "Reader pool (psycopg_pool stats)", ["stat"], registry=self.registry)
        self.encoder = Gauge("secrag_query_encoder", "Query encoder cache and runs", ["stat"], registry=self.registry)
        self.results = Gauge("secrag_result_cache", "Search result cache", ["stat"], registry=self.registry)

    def record(self, route: str, status: int, ms: float) -> None:
        self.requests.labels(route=route, status=str(status)).inc()
        self.latency.labels(route=route).observe(ms / 1000)

    def scrape(
        self,
        pool: Mapping[str, Any] | None = None,
        encoder: Mapping[str, Any] | None = None,
        results: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The text exposition, the gauges set from the running service's figures (none before it started)."""
        for gauge, figures in ((self.pool, pool), (self.encoder, encoder), (self.results, results)):
            for stat, value in (figures or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    gauge.labels(stat=stat).set(value)
        return generate_latest(self.registry)
