"""POST /v1/plan, /v1/plan/explain, GET /v1/plans and the MCP plan tool, on the real corpus store."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from .test_mcp import call


def plan(client: TestClient, query: str, key: str | None = None, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    headers = {"X-API-Key": key} if key else {}
    response = client.post("/v1/plan", json={"query": query, **body}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_plan_contract_for_a_technique_id(client: TestClient) -> None:
    result = plan(client, "T1003")
    assert result["query_type"] == "mitre_id" and "mitre_id:T1003" in result["signals"]
    assert result["plan_name"] == "mitre_id"
    assert 0 < len(result["selected"]) <= result["plan"]["total_chunks"]
    assert sum(result["quotas"].values()) <= result["plan"]["total_chunks"]
    categories = {c["category"] for c in result["selected"]}
    assert "technique" in categories and "detection" in categories
    assert result["selected"][0]["doc_id"] == "mitre_attack:T1003" or any(
        c["doc_id"] == "mitre_attack:T1003" for c in result["selected"]
    )
    context = result["context"]
    assert "## Techniques" in context and "Sources:" in context
    for citation in result["citations"]:
        assert f"[{citation['number']}] {citation['doc_id']}" in context
    assert all(0 <= v <= 1 for k, v in result["metrics"].items() if k != "mean_score")
    assert result["metrics"]["quality"] > 0
    assert result["metrics"]["correlation"] > 0  # the T1003 detections and the technique agree
    doc_ids = [c["doc_id"] for c in result["selected"]]
    assert len(doc_ids) == len(set(doc_ids))  # one chunk per document by default


def test_plans_are_deterministic(client: TestClient) -> None:
    query = "how do I detect credential dumping on Windows"
    first, second = plan(client, query), plan(client, query)
    assert first["query_type"] == "detection"
    assert [c["chunk_id"] for c in first["selected"]] == [c["chunk_id"] for c in second["selected"]]
    assert first["context"] == second["context"]


def test_total_override_forced_plan_and_filters(client: TestClient) -> None:
    result = plan(
        client,
        "credential dumping",
        total_chunks=3,
        plan="vulnerability",
        filters={"sources": ["mitre_attack", "sigma"]},
    )
    assert result["plan_name"] == "vulnerability" and result["plan"]["total_chunks"] == 3
    assert len(result["selected"]) <= 3
    assert {c["source"] for c in result["selected"]} <= {"mitre_attack", "sigma"}


def test_explain_says_why(client: TestClient) -> None:
    response = client.post("/v1/plan/explain", json={"query": "T1059", "total_chunks": 4})
    assert response.status_code == 200, response.text
    body = response.json()
    taken = [d for d in body["decisions"] if d["taken"]]
    assert 0 < len(taken) <= 4
    assert all(d["reason"] for d in body["decisions"])
    assert any(not d["taken"] for d in body["decisions"])


def test_list_plans(client: TestClient) -> None:
    body = client.get("/v1/plans").json()
    assert {"default", "mitre_id", "vulnerability", "detection", "forensic", "lolbin", "test"} <= set(body["plans"])
    assert "detection" in body["categories"]
    sources = {s["name"]: s["category"] for s in client.get("/v1/sources").json()["sources"]}
    assert sources["sigma"] == "detection"  # the registry's category, served by the store


def test_invalid_requests_are_422(client: TestClient) -> None:
    assert client.post("/v1/plan", json={"query": "x", "plan": "weather"}).status_code == 422
    assert client.post("/v1/plan", json={"query": "x", "total_chunks": 0}).status_code == 422
    assert client.post("/v1/plan", json={"query": ""}).status_code == 422
    assert client.post("/v1/plan", json={"query": "   "}).status_code == 422
    assert client.post("/v1/plan", json={"query": "a\u0000b"}).status_code == 422
    assert client.post("/v1/plan", json={"query": "x", "filters": {"doc_ids": ["a\u0000"]}}).status_code == 422
    bad = client.post("/v1/plan", json={"query": "x", "filters": {"sources": ["nope"]}})
    assert bad.status_code == 422 and "unknown source" in bad.text


def test_private_documents_never_leak_into_a_plan(client: TestClient) -> None:
    anonymous = plan(client, "note", total_chunks=20)
    assert not any(c["source"].endswith("_notes") for c in anonymous["selected"])


def test_plan_is_an_mcp_tool(client: TestClient) -> None:
    via_mcp = call(client, "plan", query="T1003")
    via_rest = plan(client, "T1003")
    assert [c["chunk_id"] for c in via_mcp["selected"]] == [c["chunk_id"] for c in via_rest["selected"]]
