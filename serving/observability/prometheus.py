"""The API's one recorder of requests (prometheus-client), one registry per app: GET /metrics is its text
format, /v1/stats' `requests` its summary (`Exposition.summary`, derived from the registry).

Requests by route template and status, their latency histogram, errors by kind, searches by mode
and query shape with their in-process time, build information, and at each scrape the state of the
reader pool, the serving model and the reader database's replica lag. Private figures are set only for a
scrape holding SECRAG_METRICS_KEY (serving/api/routes/metrics.py): the query encoder's and the result
cache's counters (a hit tells that someone searched that text) and the store's sizes and vector totals
(they count every tenant's rows).
One API process per registry: with several workers, scrape each (a Kubernetes pod, a compose
replica) rather than a shared port.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, generate_latest

from secrag.version import version
from serving.observability.in_flight import InFlight

# Seconds: searches take 10-60 ms here, plans and refetches up to seconds.
BUCKETS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
Buckets = Sequence[tuple[float, float]]  # (upper bound in seconds, cumulative count), +Inf last


class Exposition:
    """The app's metrics (every request recorded once, by serving.observability.metrics.MetricsMiddleware)
    and the scrape-time gauges."""

    def __init__(self) -> None:
        self.since = datetime.now(UTC)
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
        self.vectors = Gauge(
            "secrag_source_vectors",
            "Online sources' vectors held in memory (bytes, sources, max_bytes, failed_loads)",
            ["stat"],
            registry=self.registry,
        )
        self.standby = Gauge(
            "secrag_replica_standby",
            "The reader's database is a hot standby (1) or a primary (0)",
            registry=self.registry,
        )
        self.replica_lag = Gauge(
            "secrag_replica_lag_seconds",
            "How far the reader's database replays behind the primary (0 on a primary; NaN while unknown)",
            registry=self.registry,
        )
        self.replica_lag.set(math.nan)  # until the first reading
        self.table_bytes = Gauge(
            "secrag_store_table_bytes",
            "Size of each served table, its indexes and TOAST",
            ["table"],
            registry=self.registry,
        )
        self.index_bytes = Gauge("secrag_store_index_bytes", "Size of each index", ["index"], registry=self.registry)
        self.store_vectors = Gauge(
            "secrag_store_vectors", "Vectors in the store per model, every tenant's", ["model"], registry=self.registry
        )
        self.in_flight = InFlight()
        in_flight = Gauge(
            "secrag_http_requests_in_flight",
            "API operations (/v1 requests) in progress",
            registry=self.registry,
        )
        in_flight.set_function(self.in_flight)

    def record(self, route: str, status: int, ms: float, error: str | None = None) -> None:
        self.requests.labels(route=route, status=str(status)).inc()
        self.latency.labels(route=route).observe(ms / 1000)
        if error is not None:
            self.errors.labels(route=route, kind=error).inc()

    def search(self, mode: str, query_type: str, took_ms: float) -> None:
        self.searches.labels(mode=mode, query_type=query_type).inc()
        self.search_time.labels(mode=mode).observe(took_ms / 1000)

    def replica(self, standby: bool | None, lag_seconds: float | None) -> None:
        """The reader database's last lag reading (serving/access/replica.py), at a scrape or a readiness probe;
        None, None when the database did not answer (the lag is then unknown, NaN)."""
        if standby is not None:
            self.standby.set(1 if standby else 0)
        self.replica_lag.set(math.nan if lag_seconds is None else lag_seconds)

    def store(self, table_bytes: Mapping[str, int], index_bytes: Mapping[str, int], vectors: Mapping[str, int]) -> None:
        """The store-wide sizes and vector totals of a keyed scrape (serving/reads/stats.py store_sizes)."""
        for gauge, label, figures in (
            (self.table_bytes, "table", table_bytes),
            (self.index_bytes, "index", index_bytes),
            (self.store_vectors, "model", vectors),
        ):
            gauge.clear()  # a dropped index or pruned model leaves no stale series
            for name, value in figures.items():
                gauge.labels(**{label: name}).set(value)

    def scrape(
        self,
        pool: Mapping[str, Any] | None = None,
        encoder: Mapping[str, Any] | None = None,
        results: Mapping[str, Any] | None = None,
        model: str | None = None,
        vectors: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The text exposition, the gauges set from the running service's figures (none before it started);
        `encoder` and `results`, the caches' counters, only for a keyed scrape."""
        if model is not None:
            self.model.clear()
            self.model.labels(model=model).set(1)
        encoder = dict(encoder or {})
        looked_up = (encoder.get("hits") or 0) + (encoder.get("misses") or 0)
        if looked_up and isinstance(encoder.get("hits"), int):
            encoder["hit_ratio"] = encoder["hits"] / looked_up
        for gauge, figures in (
            (self.pool, pool),
            (self.encoder, encoder),
            (self.results, results),
            (self.vectors, vectors),
        ):
            for stat, value in (figures or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    gauge.labels(stat=stat).set(value)
        return generate_latest(self.registry)

    def summary(self) -> dict[str, object]:
        """Requests since start, from the registry (/v1/stats' `requests`): count and latency percentiles
        (milliseconds, estimated from the histogram's buckets) per route and in total, and counts per status
        class (2xx, 4xx, ...)."""
        return _summary(self)


def quantile(q: float, buckets: Buckets) -> float | None:
    """The q-quantile (0-1) of a histogram's observations, estimated as Prometheus' histogram_quantile does:
    linear within the bucket the rank falls in (from 0 for the first), the highest finite bound when it
    falls in +Inf; None without observations."""
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower
            return bound if count == below else lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def _summary(metrics: Exposition) -> dict[str, object]:
    counts: dict[str, float] = {}
    by_status: dict[str, int] = {}
    for family in metrics.requests.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                route, status = sample.labels["route"], sample.labels["status"]
                counts[route] = counts.get(route, 0) + sample.value
                key = f"{int(status) // 100}xx"
                by_status[key] = by_status.get(key, 0) + int(sample.value)
    per_route: dict[str, dict[float, float]] = {}
    for family in metrics.latency.collect():
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                per_route.setdefault(sample.labels["route"], {})[float(sample.labels["le"])] = sample.value
    overall: dict[float, float] = {}
    for buckets in per_route.values():
        for bound, count in buckets.items():
            overall[bound] = overall.get(bound, 0) + count
    return {
        "since": metrics.since,
        "total": _describe(int(sum(counts.values())), overall),
        "by_route": {route: _describe(int(counts.get(route, 0)), b) for route, b in per_route.items()},
        "by_status": by_status,
    }


def _describe(count: int, buckets: dict[float, float]) -> dict[str, Any]:
    ordered = sorted(buckets.items())

    def ms(q: float) -> float | None:
        seconds = quantile(q, ordered)
        return None if seconds is None else seconds * 1000

    return {"count": count, "p50_ms": ms(0.50), "p95_ms": ms(0.95), "p99_ms": ms(0.99)}
