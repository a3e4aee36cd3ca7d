"""Nothing private leaks through totals: /v1/stats gives a caller figures of what it may see only; store-wide
sizes and vector totals, and the caches' counters (which tell whether someone searched a text), are on /metrics
only for a scraper holding SECRAG_METRICS_KEY."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings

MODEL = "all-MiniLM-L6-v2"
METRICS_KEY = "Zq7_xK2mP9vR4wT8yB1nC5hJ3dF6gL0s"
PRIVATE_SERIES = re.compile(r"^secrag_(store_\w+|query_encoder|result_cache)\{", re.MULTILINE)


def _sample(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    found = re.search(rf"^{name}{{{re.escape(wanted)}}} (\S+)$", text, re.MULTILINE)
    assert found, f"{name}{{{wanted}}} not in /metrics"
    return float(found.group(1))


def test_stats_count_only_what_the_caller_may_see(client: TestClient, serving_db_url: str) -> None:
    with database.connect(serving_db_url) as conn:
        store_vectors = conn.execute("SELECT count(*) FROM embeddings WHERE model_id = %s", [MODEL]).fetchone()[0]
    for key in (None, "gina-key"):
        stats = client.get("/v1/stats", headers={"X-API-Key": key} if key else {}).json()
        assert not {"index_bytes", "table_bytes", "encoder", "result_cache"} & stats.keys()
        model = next(m for m in stats["models"] if m["model_id"] == MODEL)
        seen = sum(s["embeddings"].get(MODEL, 0) for s in stats["sources"].values())
        assert model["embeddings"] == seen
    anonymous = client.get("/v1/stats").json()
    assert next(m for m in anonymous["models"] if m["model_id"] == MODEL)["embeddings"] < store_vectors


def test_open_metrics_hold_no_private_figures(client: TestClient) -> None:
    client.post("/v1/search", json={"query": "lsass memory"})
    client.post("/v1/search", json={"query": "lsass memory"})  # a cache hit, if counted, would show
    text = client.get("/metrics").text
    assert "secrag_http_requests_total" in text
    assert not PRIVATE_SERIES.findall(text)


def test_a_metrics_key_guards_the_store_wide_figures(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    settings = settings_for(serving_db_url, mcp_enabled=False, metrics_key=METRICS_KEY, result_cache_size=8)
    with TestClient(create_app(settings)) as api:
        assert api.get("/metrics").status_code == 401
        assert api.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
        api.post("/v1/search", json={"query": "lsass memory"})
        api.post("/v1/search", json={"query": "lsass memory"})
        text = api.get("/metrics", headers={"Authorization": f"Bearer {METRICS_KEY}"}).text
        with database.connect(serving_db_url) as conn:
            vectors = conn.execute("SELECT count(*) FROM embeddings WHERE model_id = %s", [MODEL]).fetchone()[0]
        assert _sample(text, "secrag_store_vectors", model=MODEL) == vectors
        assert _sample(text, "secrag_store_table_bytes", table="chunks") > 0
        index = re.compile(r'^secrag_store_index_bytes\{index="embeddings_minilm_hnsw\w*"\} [1-9]', re.MULTILINE)
        assert index.search(text)
        assert _sample(text, "secrag_result_cache", stat="hits") >= 1
        assert _sample(text, "secrag_query_encoder", stat="max_size") == settings.query_cache_size
        assert api.get("/metrics", headers={"X-API-Key": METRICS_KEY}).status_code == 200
        assert api.get("/healthz").status_code == 200 and api.get("/readyz").status_code == 200  # probes stay open
