"""The opt-in query log."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings

MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


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


def test_searches_plans_and_mcp_calls_are_logged_with_their_attention_flags(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    """On the serving corpus (its log emptied afterwards: other tests read it)."""
    settings = settings_for(serving_db_url, query_log=True, query_log_text=True)
    try:
        with TestClient(create_app(settings)) as api:
            assert api.post("/v1/search", json={"query": "zzqx vvbnm", "mode": "fts"}).status_code == 200
            assert api.post("/v1/search", json={"query": "T9999 lsass", "mode": "hybrid"}).status_code == 200
            assert api.post("/v1/plan", json={"query": "T1003 credential dumping"}).status_code == 200
            call = {"name": "fts", "arguments": {"query": "qqwxz"}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
            mcp = api.post("/mcp/", json=body, headers=MCP_HEADERS)
            assert mcp.status_code == 200 and not mcp.json()["result"].get("isError")
        with database.connect(serving_db_url) as conn:
            rows = conn.execute("SELECT endpoint, query_text, attention FROM query_log ORDER BY id").fetchall()
    finally:
        with database.connect(serving_db_url, autocommit=True) as conn:
            conn.execute("DELETE FROM query_log")
    by_text = {text: (endpoint, attention) for endpoint, text, attention in rows}
    assert by_text["zzqx vvbnm"] == ("search", ["zero_results"])
    assert by_text["T9999 lsass"][0] == "search" and "unknown_attack_ids:T9999" in by_text["T9999 lsass"][1]
    planned = by_text["T1003 credential dumping"]
    assert planned[0] == "plan" and not any(f.startswith(("zero_results", "unknown", "weak")) for f in planned[1])
    assert by_text["qqwxz"] == ("mcp:search", ["zero_results"])
