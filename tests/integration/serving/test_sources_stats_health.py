"""Sources, stats (exact counts) and the health probes."""

from __future__ import annotations

from fastapi.testclient import TestClient

from secrag.db import database


def test_sources(client: TestClient) -> None:
    sources = {s["name"]: s for s in client.get("/v1/sources").json()["sources"]}
    assert {"mitre_attack", "sigma", "atomic", "cisa_kev", "lolbas"} <= set(sources)
    kev = sources["cisa_kev"]
    assert (kev["version"], kev["state"], kev["records"], kev["kind"]) == ("test-v1", "ok", 50, "online")
    assert kev["last_sync"] and kev["upstream"].startswith("https://")
    assert kev["last_attempt"]["status"] == "published" and kev["last_attempt"]["version"] == "test-v1"
    assert kev["last_success"] is not None
    assert not any(s["kind"] == "user_folder" for s in sources.values())  # anonymous sees no private folders


def test_stats_counts_are_exact(client: TestClient, serving_db_url: str) -> None:
    stats = client.get("/v1/stats").json()
    with database.connect(serving_db_url) as conn:
        for source in ("mitre_attack", "sigma", "lolbas"):
            docs, chunks = conn.execute(
                "SELECT (SELECT count(*) FROM documents WHERE source = %(s)s), "
                "(SELECT count(*) FROM chunks WHERE source = %(s)s)",
                {"s": source},
            ).fetchone()
            vectors = conn.execute(
                "SELECT count(DISTINCT c.content_hash) FROM chunks c JOIN embeddings e "
                "USING (content_hash) WHERE c.source = %s",
                [source],
            ).fetchone()[0]
            got = stats["sources"][source]
            assert (got["documents"], got["chunks"], got["chunks_embedded"]) == (docs, chunks, chunks)
            assert got["embeddings"] == {"all-MiniLM-L6-v2": vectors}
            assert got["versions"] == {"published": 1} and got["current_version"] == "test-v1"
    assert stats["totals"]["documents"] == sum(s["documents"] for s in stats["sources"].values())
    assert stats["models"][0]["model_id"] == "all-MiniLM-L6-v2" and stats["models"][0]["active"]
    # the model's vectors of the sources this caller sees (tests/integration/serving/test_private_totals.py)
    seen = sum(s["embeddings"].get("all-MiniLM-L6-v2", 0) for s in stats["sources"].values())
    assert stats["models"][0]["embeddings"] == seen


def test_stats_report_request_latency(client: TestClient) -> None:
    client.get("/healthz")
    client.post("/v1/search", json={"query": "lsass"})
    requests = client.get("/v1/stats").json()["requests"]
    assert requests["by_route"]["/v1/search"]["count"] >= 1
    assert requests["by_route"]["/v1/search"]["p50_ms"] > 0
    assert requests["total"]["p99_ms"] >= requests["total"]["p50_ms"]


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    # the default maximum lag (30 s) is checked on a primary too, where the lag is 0
    assert body["checks"] == {"database": True, "schema": True, "model": True, "replica_lag": True}
    assert body["replica"] == {"standby": False, "lag_seconds": 0.0, "max_lag_seconds": 30.0}
    assert body["schema_version"] == body["expected_schema_version"] >= 1


def test_openapi_documents_the_score_scales(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert "/v1/search" in schema["paths"]
    assert "cosine similarity" in schema["paths"]["/v1/search"]["post"]["description"]
    assert client.get("/docs").status_code == 200


def test_the_docs_page_needs_no_internet(client: TestClient) -> None:
    page = client.get("/docs").text
    assert "/docs-assets/swagger-ui-bundle.js" in page and "/docs-assets/swagger-ui.css" in page
    assert "cdn." not in page and "https://" not in page.split("<body>")[0]  # nothing fetched from elsewhere
    script = client.get("/docs-assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.text[:2000]
    assert client.get("/docs-assets/swagger-ui.css").status_code == 200


def test_prometheus_metrics_follow_the_requests(client: TestClient) -> None:
    client.post("/v1/search", json={"query": "lsass memory dump", "k": 3})
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'secrag_http_requests_total{route="/v1/search",status="200"}' in text
    assert "secrag_http_request_duration_seconds_bucket" in text
    assert 'secrag_db_pool{stat="pool_size"}' in text
    assert "secrag_query_encoder{" not in text  # cache counters only with SECRAG_METRICS_KEY (test_private_totals)
    assert 'secrag_searches_total{mode="hybrid",query_type="keyword"}' in text
    assert "secrag_build_info{" in text and "secrag_serving_model{model=" in text
    assert client.post("/v1/search", json={"query": "x", "k": 0}).status_code == 422
    assert 'secrag_http_errors_total{kind="validation",route="/v1/search"}' in client.get("/metrics").text
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]
