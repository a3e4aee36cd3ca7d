"""The Prometheus exposition: requests by route and status with a latency histogram, and gauges set from
the figures given at scrape time; each app has its own registry."""

from __future__ import annotations

import math

from prometheus_client.parser import text_string_to_metric_families

from serving.observability.prometheus import Exposition


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_requests_latency_and_gauges() -> None:
    exposition = Exposition()
    exposition.record("/v1/search", 200, 12.0)
    exposition.record("/v1/search", 200, 30.0)
    exposition.record("/v1/search", 429, 1.0)
    got = _samples(
        exposition.scrape(pool={"pool_size": 4}, encoder={"hits": 3, "backend": "onnx"}, vectors={"bytes": 1024})
    )
    assert got[("secrag_http_requests_total", (("route", "/v1/search"), ("status", "200")))] == 2
    assert got[("secrag_http_requests_total", (("route", "/v1/search"), ("status", "429")))] == 1
    assert got[("secrag_http_request_duration_seconds_count", (("route", "/v1/search"),))] == 3
    assert got[("secrag_http_request_duration_seconds_bucket", (("le", "0.02"), ("route", "/v1/search")))] == 2
    assert got[("secrag_db_pool", (("stat", "pool_size"),))] == 4
    assert got[("secrag_query_encoder", (("stat", "hits"),))] == 3  # text figures are left out
    assert got[("secrag_source_vectors", (("stat", "bytes"),))] == 1024


def test_apps_do_not_share_a_registry() -> None:
    first, second = Exposition(), Exposition()
    first.record("/healthz", 200, 1.0)
    assert b'route="/healthz"' in first.scrape() and b'route="/healthz"' not in second.scrape()


def test_errors_searches_build_model_and_hit_ratio() -> None:
    exposition = Exposition()
    exposition.record("/v1/search", 422, 1.0, "validation")
    exposition.record("/v1/search", 504, 2000.0, "statement_timeout")
    exposition.search("hybrid", "natural", 18.0)
    exposition.search("hybrid", "natural", 22.0)
    exposition.search("fts", "keyword", 4.0)
    got = _samples(exposition.scrape(encoder={"hits": 1, "misses": 3}, model="all-MiniLM-L6-v2-int8"))
    assert got[("secrag_http_errors_total", (("kind", "validation"), ("route", "/v1/search")))] == 1
    assert got[("secrag_http_errors_total", (("kind", "statement_timeout"), ("route", "/v1/search")))] == 1
    assert got[("secrag_searches_total", (("mode", "hybrid"), ("query_type", "natural")))] == 2
    assert got[("secrag_search_duration_seconds_count", (("mode", "hybrid"),))] == 2
    assert got[("secrag_query_encoder", (("stat", "hit_ratio"),))] == 0.25
    assert got[("secrag_serving_model", (("model", "all-MiniLM-L6-v2-int8"),))] == 1
    [build] = [v for (name, labels), v in got.items() if name == "secrag_build_info"]
    assert build == 1
    # a model switch leaves one series
    got = _samples(exposition.scrape(model="all-MiniLM-L6-v2"))
    assert [labels for (name, labels) in got if name == "secrag_serving_model"] == [(("model", "all-MiniLM-L6-v2"),)]


def test_the_replica_gauges_hold_the_last_reading_and_nan_while_unknown() -> None:
    exposition = Exposition()
    assert math.isnan(_samples(exposition.scrape())[("secrag_replica_lag_seconds", ())])  # before any reading
    exposition.replica(True, 2.5)
    got = _samples(exposition.scrape())
    assert got[("secrag_replica_standby", ())] == 1 and got[("secrag_replica_lag_seconds", ())] == 2.5
    exposition.replica(None, None)  # the database did not answer: the lag is unknown, the kind of server kept
    got = _samples(exposition.scrape())
    assert got[("secrag_replica_standby", ())] == 1 and math.isnan(got[("secrag_replica_lag_seconds", ())])
    exposition.replica(False, 0.0)
    assert _samples(exposition.scrape())[("secrag_replica_standby", ())] == 0
