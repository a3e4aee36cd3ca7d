"""The MCP tools at /mcp/ (streamable HTTP, JSON responses) share the REST implementation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.serving.test_layer_reading import layer_file

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
    assert tools == MCP_TOOLS


MCP_TOOLS = {
    "search",
    "fts",
    "vector",
    "hybrid",
    "fuzzy",
    "plan",
    "explain",
    "map",
    "coverage",
    "compare_layers",
    "lookup",
    "list_plans",
    "get_documents",
    "get_document",
    "get_chunks",
    "get_chunk",
    "get_upstream",
    "get_upstreams",
    "list_sources",
    "stats",
    "changes",
}


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
    arguments = {"query": "x", "filters": {"sources": ["nope"]}}
    result = rpc(client, "tools/call", {"name": "search", "arguments": arguments})["result"]
    assert result["isError"]
    text = json.dumps(result)
    assert "unknown source" in text and "Traceback" not in text
    too_many = rpc(client, "tools/call", {"name": "search", "arguments": {"query": "x", "k": 500}})["result"]
    assert too_many["isError"] and "k must be at most 50" in json.dumps(too_many)  # the REST limit


REST_CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("search", "POST", "/v1/search", {"query": "lsass memory", "k": 5, "strategy": "fts_then_vec", "offset": 1}),
    (
        "search",
        "POST",
        "/v1/search",
        {"query": "T1003", "k": 3, "filters": {"platforms": ["Windows"]}, "min_score": 0.1},
    ),
    ("fts", "POST", "/v1/search", {"query": "mimikatz", "k": 4}),
    ("vector", "POST", "/v1/search", {"query": "dump credentials from memory", "k": 4}),
    ("hybrid", "POST", "/v1/search", {"query": "CVE-2021-44228", "k": 4}),
    ("fuzzy", "POST", "/v1/search", {"query": "mimikatzz", "k": 4}),
    ("explain", "POST", "/v1/plan/explain", {"query": "T1003", "total_chunks": 4}),
    ("list_plans", "GET", "/v1/plans", {}),
    ("get_chunks", "POST", "/v1/chunks", {"ids": ["nope"]}),
    ("get_document", "GET", "/v1/docs/mitre_attack:T1003", {"doc_id": "mitre_attack:T1003"}),
    (
        "get_upstream",
        "GET",
        "/v1/docs/capec:CAPEC-66/upstream?columns=name",
        {"doc_id": "capec:CAPEC-66", "columns": ["name"]},
    ),
    (
        "get_upstreams",
        "POST",
        "/v1/docs/upstream",
        {"doc_ids": ["capec:CAPEC-66", "cisa_kev:CVE-2021-44228", "nope:1"], "columns": ["name", "cveID"]},
    ),
]


@pytest.mark.parametrize(("tool", "method", "path", "arguments"), REST_CASES, ids=[c[0] for c in REST_CASES])
def test_every_tool_answers_what_rest_answers(
    client: TestClient, tool: str, method: str, path: str, arguments: dict[str, Any]
) -> None:
    body = {**arguments, "mode": tool} if tool in ("fts", "vector", "hybrid", "fuzzy") else arguments
    rest = client.request(method, path, json=body if method == "POST" else None)
    assert rest.status_code == 200, rest.text
    via_mcp, expected = call(client, tool, **arguments), rest.json()
    for volatile in ("took_ms",):
        via_mcp.pop(volatile, None), expected.pop(volatile, None)
    assert via_mcp == expected


def test_per_id_tools_and_their_404(client: TestClient) -> None:
    chunk = client.post("/v1/search", json={"query": "T1003", "k": 1}).json()["results"][0]["chunk_id"]
    assert call(client, "get_chunk", chunk_id=chunk)["chunk_id"] == chunk
    missing = rpc(client, "tools/call", {"name": "get_document", "arguments": {"doc_id": "mitre_attack:T9999"}})
    assert missing["result"]["isError"] and "no document" in json.dumps(missing["result"])


def _chunk_id(client: TestClient) -> str:
    return str(client.post("/v1/search", json={"query": "T1003", "k": 1}).json()["results"][0]["chunk_id"])


BUDGET_CASES: dict[str, dict[str, Any]] = {
    "search": {"query": "credential dumping from lsass memory", "k": 20, "return": {"text": True, "metadata": True}},
    "fts": {"query": "mimikatz", "k": 20},
    "vector": {"query": "dump credentials from memory", "k": 20},
    "hybrid": {"query": "CVE-2021-44228", "k": 20},
    "fuzzy": {"query": "mimikatzz", "k": 20},
    "plan": {"query": "how do attackers dump lsass"},
    "explain": {"query": "T1003"},
    "map": {"text": "The actor dumped LSASS memory with Mimikatz. It ran PowerShell scripts to move laterally."},
    "coverage": {"techniques": ["T1003", "T1003.001", "T1059"]},
    "compare_layers": {
        "left": layer_file("apt28_4_4.json"),
        "right": layer_file("my_rules_4_5.json"),
        "operation": "union",
    },
    "lookup": {"value": ["certutil.exe", "version.dll", "rundll32.exe", "lsass.exe"], "limit": 100},
    "list_plans": {},
    "get_documents": {"ids": ["mitre_attack:T1003", "capec:CAPEC-66", "cisa_kev:CVE-2021-44228"]},
    "get_document": {"doc_id": "mitre_attack:T1003"},
    "get_chunks": {"ids": ["<chunk>"]},
    "get_chunk": {"chunk_id": "<chunk>"},
    "get_upstream": {"doc_id": "capec:CAPEC-66"},
    "get_upstreams": {"doc_ids": ["capec:CAPEC-66", "cisa_kev:CVE-2021-44228", "mitre_attack:T1003"]},
    "changes": {},
    "list_sources": {},
    "stats": {},
}


def test_every_tool_is_budgeted() -> None:
    assert set(BUDGET_CASES) == set(MCP_TOOLS)


@pytest.mark.parametrize("tool", sorted(BUDGET_CASES))
@pytest.mark.parametrize("budget", [1000, 2000])
def test_a_budgeted_answer_fits_and_says_what_was_cut(client: TestClient, tool: str, budget: int) -> None:
    chunk = _chunk_id(client)
    arguments = {
        k: ([chunk] if v == ["<chunk>"] else chunk if v == "<chunk>" else v) for k, v in BUDGET_CASES[tool].items()
    }
    whole = call(client, tool, **arguments)
    result = rpc(client, "tools/call", {"name": tool, "arguments": {**arguments, "max_chars": budget}})["result"]
    assert not result.get("isError"), result
    text = result["content"][0]["text"]
    assert len(text) <= budget
    assert json.loads(text) == result["structuredContent"]
    cut = result["structuredContent"]
    if len(json.dumps(whole, ensure_ascii=False, separators=(",", ":"))) > budget:
        assert cut["budget"]["max_chars"] == budget
    else:  # the same answer (a timing aside: it was asked twice)
        assert {k: v for k, v in cut.items() if k != "took_ms"} == {k: v for k, v in whole.items() if k != "took_ms"}


def test_search_under_budget_keeps_ids_titles_and_scores_first(client: TestClient) -> None:
    whole = call(client, "search", query="credential dumping from lsass memory", k=20)
    cut = call(client, "search", query="credential dumping from lsass memory", k=20, max_chars=2000)
    kept = cut["results"]
    assert kept and [r["doc_id"] for r in kept] == [r["doc_id"] for r in whole["results"][: len(kept)]]
    assert all({"doc_id", "title", "score", "source", "url"} <= r.keys() for r in kept)
    assert cut["budget"]["dropped"]["results"] == len(whole["results"]) - len(kept)


def _error(client: TestClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = rpc(client, "tools/call", {"name": tool, "arguments": arguments})["result"]
    assert result["isError"]
    body: dict[str, Any] = json.loads(result["content"][0]["text"])
    assert list(body) == ["kind", "detail", "hint"]
    return body


def test_tool_errors_carry_kind_detail_and_a_hint_naming_valid_values(client: TestClient) -> None:
    mode = _error(client, "search", {"query": "x", "mode": "semantic"})
    assert mode["kind"] == "validation" and mode["detail"][0]["loc"] == ["mode"]
    assert "mode: one of" in mode["hint"] and all(m in mode["hint"] for m in ("'fts'", "'vector'", "'fuzzy'"))
    plan = _error(client, "plan", {"query": "x", "plan": "nope"})
    assert "plan: one of" in plan["hint"] and "'mitre_id'" in plan["hint"]
    source = _error(client, "search", {"query": "x", "filters": {"sources": ["nope"]}})
    assert source["kind"] == "invalid_field" and "sigma" in source["hint"] and "mitre_attack" in source["hint"]
    k = _error(client, "search", {"query": "x", "k": 500})
    assert k["kind"] == "invalid_field" and "k: integer from 1 to 50" in k["hint"]
    budget = _error(client, "stats", {"max_chars": 10})
    assert "max_chars: integer from 1000 to 1000000" in budget["hint"]
    missing = _error(client, "get_document", {"doc_id": "mitre_attack:T9999"})
    assert missing["kind"] == "not_found" and "source:record" in missing["hint"]
    unknown = _error(client, "nope", {})
    assert unknown["kind"] == "unknown_tool" and "get_documents" in unknown["hint"]


def test_resources_follow_the_callers_visibility(client: TestClient) -> None:
    def read(uri: str, key: str | None = None) -> dict[str, Any]:
        contents = rpc(client, "resources/read", {"uri": uri}, key)["result"]["contents"]
        assert contents[0]["mimeType"] == "application/json"
        return dict(json.loads(contents[0]["text"]))

    public = {s["name"] for s in read("secrag://sources")["sources"]}
    private = {s["name"] for s in read("secrag://sources", "gina-key")["sources"]}
    assert "sigma" in public and "globex_notes" not in public and "globex_notes" in private
    assert read("secrag://sources/globex_notes", "gina-key")["name"] == "globex_notes"
    hidden = rpc(client, "resources/read", {"uri": "secrag://sources/globex_notes"})
    assert hidden["error"]["data"]["kind"] == "not_found" and "sigma" in hidden["error"]["data"]["hint"]
    rest = client.get("/v1/sources").json()["sources"]
    sigma = read("secrag://sources/sigma")
    assert sigma == next(s for s in rest if s["name"] == "sigma")
    assert read("secrag://plans") == client.get("/v1/plans").json()
