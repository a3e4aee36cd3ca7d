"""POST /v1/plan, /v1/plan/explain, GET /v1/plans and the MCP plan tool, on the real corpus store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings
from serving.settings.api import default_plans_file

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


def test_citations_say_where_each_passage_sits(client: TestClient, serving_db_url: str) -> None:
    """Each passage carries its character span in the document body, its heading and the document's media
    type; the span holds the passage's text."""
    result = plan(client, "T1003")
    by_doc = {c["doc_id"]: c for c in result["citations"]}
    with database.connect(serving_db_url) as conn:
        bodies = dict(
            conn.execute("SELECT doc_id, body FROM documents WHERE doc_id = ANY(%s)", [list(by_doc)]).fetchall()
        )
    for chunk in result["selected"]:
        location = chunk["location"]
        span = bodies[chunk["doc_id"]][location["char_start"] : location["char_end"]]
        assert span.startswith(chunk["text"].split("\n\n")[0]) and span.endswith(chunk["text"].rsplit("\n\n")[-1])
        passage = next(p for p in by_doc[chunk["doc_id"]]["passages"] if p["chunk_id"] == chunk["chunk_id"])
        assert (passage["char_start"], passage["char_end"]) == (location["char_start"], location["char_end"])
    assert by_doc["mitre_attack:T1003"]["media_type"] == "application/json"  # one STIX object
    sigma = [c for c in result["citations"] if c["source"] == "sigma"]
    assert sigma and all(c["media_type"] == "application/yaml" for c in sigma)


def test_noise_filter_trims_passages_not_their_spans(client: TestClient) -> None:
    query = "rundll32 comsvcs minidump lsass"
    plain = {c["chunk_id"]: c for c in plan(client, query)["selected"]}
    trimmed = {c["chunk_id"]: c for c in plan(client, query, noise_filter="aggressive")["selected"]}
    assert set(plain) == set(trimmed)  # the same passages are chosen
    assert sum(len(c["text"]) for c in trimmed.values()) < sum(len(c["text"]) for c in plain.values())
    assert all(trimmed[i]["location"] == plain[i]["location"] for i in plain)
    bad = client.post("/v1/plan", json={"query": query, "noise_filter": "loud"})
    assert bad.status_code == 422


def test_collections_carry_a_system_prompt_and_grounded_only(
    client: TestClient, serving_db_url: str, settings_for: Callable[..., ServingSettings], tmp_path: Path
) -> None:
    shipped = default_plans_file().read_text()
    plans_file = tmp_path / "plans.yaml"
    plans_file.write_text(
        shipped
        + "\ncollections:\n"
        + "  mitre_attack: {system_prompt: 'Quote ATT&CK ids as written.'}\n"
        + "  sigma: {system_prompt: 'Name the Sigma rule and its level.', grounded_only: true}\n"
        + "  lolbas: {system_prompt: 'Never cited here.'}\n"
    )
    with TestClient(create_app(settings_for(serving_db_url, plans_file=plans_file, mcp_enabled=False))) as api:
        result = plan(api, "T1003")
        assert result["grounded_only"] is True  # a cited sigma rule asks for it
        assert set(result["system_prompts"]) == {"Quote ATT&CK ids as written.", "Name the Sigma rule and its level."}
        prompt = result["prompt"]
        grounded = prompt.index("Answer only from the numbered sources")
        assert max(prompt.index(p) for p in result["system_prompts"]) < grounded < prompt.index(result["context"])
        assert prompt.rstrip().endswith(result["context"].rstrip())  # the numbered sources list closes it
        overruled = plan(api, "T1003", grounded_only=False)
        assert overruled["grounded_only"] is False and "Answer only from" not in overruled["prompt"]
    default = plan(client, "T1003")  # the shipped plans file names no collection
    assert default["system_prompts"] == [] and default["grounded_only"] is False
    assert default["prompt"] == default["context"]


def test_schema_passages_say_where_they_sit_too(client: TestClient) -> None:
    """The schema records a plan adds for its detections' logsources carry their location like the rest."""
    result = plan(client, "which table has the process command line for encoded powershell", plan="schema")
    schema = [c for c in result["selected"] if c["category"] == "schema"]
    assert schema and all(c["location"]["char_start"] is not None for c in schema)
    assert all(c["location"]["media_type"] == "application/yaml" for c in schema if c["source"] == "ossem_dd")
