"""The opt-in query log."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from secrag import database
from serving.app import create_app
from serving.settings import ServingSettings


def _rows(url: str) -> list[tuple]:
    with database.connect(url) as conn:
        return conn.execute(
            "SELECT endpoint, query_type, query_text, result_count, top_score, latency_ms FROM query_log ORDER BY id"
        ).fetchall()


def test_query_log_is_off_by_default(client: TestClient, serving_db_url: str) -> None:
    client.post("/v1/search", json={"query": "lsass"})
    assert _rows(serving_db_url) == []


def test_query_log_without_and_with_text(db_url: str, settings_for: Callable[..., ServingSettings]) -> None:
    with TestClient(create_app(settings_for(db_url, query_log=True, mcp_enabled=False))) as api:
        assert api.post("/v1/search", json={"query": "T1003", "mode": "fts"}).status_code == 200
    with TestClient(create_app(settings_for(db_url, query_log=True, query_log_text=True, mcp_enabled=False))) as api:
        assert api.post("/v1/search", json={"query": "secret words", "mode": "fts"}).status_code == 200
    rows = _rows(db_url)
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("search", "technique", None, 0),
        ("search", "keyword", "secret words", 0),
    ]
    assert all(r[5] > 0 for r in rows)
