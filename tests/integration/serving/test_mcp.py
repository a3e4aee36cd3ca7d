"""The MCP tools at /mcp/ (streamable HTTP, JSON responses) share the REST implementation."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}


def rpc(client: TestClient, method: str, params: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    headers = {**HEADERS, **({"x-api-key": key} if key else {})}
    response = client.post(
        "/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()


def call(client: TestClient, tool: str, key: str | None = None, **arguments: Any) -> dict[str, Any]:
    result = rpc(client, "tools/call", {"name": tool, "arguments": arguments}, key)["result"]
    assert not result.get("isError"), result
    return result.get("structuredContent") or json.loads(result["content"][0]["text"])


def test_tools_are_listed(client: TestClient) -> None:
    rpc(
        client,
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
    )
    tools = {t["name"] for t in rpc(client, "tools/list", {})["result"]["tools"]}
    assert {"search", "get_documents", "list_sources", "stats"} <= tools


def test_search_tool_matches_rest(client: TestClient) -> None:
    via_mcp = call(client, "search", query="T1003", k=5)
    via_rest = client.post("/v1/search", json={"query": "T1003", "k": 5}).json()
    assert [r["doc_id"] for r in via_mcp["results"]] == [r["doc_id"] for r in via_rest["results"]]


def test_document_source_and_stats_tools(client: TestClient) -> None:
    docs = call(client, "get_documents", ids=["mitre_attack:T1003", "globex_notes:note-0"])
    assert [d["doc_id"] for d in docs["documents"]] == ["mitre_attack:T1003"]
    assert docs["missing"] == ["globex_notes:note-0"]
    assert "sigma" in {s["name"] for s in call(client, "list_sources")["sources"]}
    assert call(client, "stats")["totals"]["documents"] > 0
    private = call(client, "get_documents", key="gina-key", ids=["globex_notes:note-0"])
    assert [d["doc_id"] for d in private["documents"]] == ["globex_notes:note-0"]


def test_tool_errors_are_clean(client: TestClient) -> None:
    result = rpc(client, "tools/call", {"name": "search", "arguments": {"query": "x", "sources": ["nope"]}})["result"]
    assert result["isError"]
    text = json.dumps(result)
    assert "unknown source" in text and "Traceback" not in text
