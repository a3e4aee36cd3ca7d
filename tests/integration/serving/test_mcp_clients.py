"""The official MCP client against secrag: over streamable HTTP (a live uvicorn) and over stdio (`secrag mcp`):
tools with and without a budget, a structured error, resources and prompts."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

from secrag.version import version as server_version


async def _exercise(session: ClientSession) -> dict[str, Any]:
    info = await session.initialize()
    tools = {t.name for t in (await session.list_tools()).tools}
    found = await session.call_tool("fts", {"query": "T1003", "k": 3})
    docs = await session.call_tool("get_documents", {"ids": ["mitre_attack:T1003"]})
    bad = await session.call_tool("search", {"query": "x", "filters": {"sources": ["nope"]}})
    whole = await session.call_tool("hybrid", {"query": "credential dumping from lsass memory", "k": 20})
    budgeted = await session.call_tool(
        "hybrid", {"query": "credential dumping from lsass memory", "k": 20, "max_chars": 1500}
    )
    mode = await session.call_tool("search", {"query": "x", "mode": "semantic"})
    sources = await session.read_resource("secrag://sources")
    sigma = await session.read_resource("secrag://sources/sigma")
    plans = await session.read_resource("secrag://plans")
    try:
        await session.read_resource("secrag://sources/nope")
        unknown: Any = None
    except MCPError as exc:
        unknown = exc.error.data
    prompt = await session.get_prompt("coverage_for_group", {"group": "G0016"})
    return {
        "version": info.server_info.version,
        "tools": tools,
        "found": found.structured_content or json.loads(found.content[0].text),  # type: ignore[union-attr]
        "docs": docs.structured_content,
        "bad": (bad.is_error, json.dumps([c.model_dump() for c in bad.content])),
        "whole": _text(whole),
        "budgeted": _text(budgeted),
        "mode": (mode.is_error, json.loads(_text(mode))),
        "resources": {str(r.uri) for r in (await session.list_resources()).resources},
        "templates": {t.uri_template for t in (await session.list_resource_templates()).resource_templates},
        "sources": json.loads(sources.contents[0].text),  # type: ignore[union-attr]
        "sigma": json.loads(sigma.contents[0].text),  # type: ignore[union-attr]
        "plans": json.loads(plans.contents[0].text),  # type: ignore[union-attr]
        "unknown": unknown,
        "prompts": {p.name for p in (await session.list_prompts()).prompts},
        "prompt": prompt.messages[0].content.text,  # type: ignore[union-attr]
    }


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _check(seen: dict[str, Any]) -> None:
    assert seen["version"] == server_version() and seen["version"]
    assert {"search", "fts", "plan", "explain", "get_upstream", "get_chunks", "stats"} <= seen["tools"]
    assert seen["found"]["results"][0]["doc_id"] == "mitre_attack:T1003"
    assert [d["doc_id"] for d in seen["docs"]["documents"]] == ["mitre_attack:T1003"]
    assert seen["bad"][0] and "unknown source" in seen["bad"][1]
    # a budget: the answer's text within it, the best results first, what was cut said
    whole, cut = json.loads(seen["whole"]), json.loads(seen["budgeted"])
    assert len(seen["budgeted"]) <= 1500 < len(seen["whole"])
    assert [r["doc_id"] for r in cut["results"]] == [r["doc_id"] for r in whole["results"][: len(cut["results"])]]
    assert cut["budget"]["dropped"]["results"] == len(whole["results"]) - len(cut["results"])
    # a structured error naming the valid values
    is_error, body = seen["mode"]
    assert is_error and body["kind"] == "validation" and "'fuzzy'" in body["hint"]
    # resources and prompts
    assert seen["resources"] == {"secrag://sources", "secrag://plans"}
    assert seen["templates"] == {"secrag://sources/{name}"}
    listed = {s["name"]: s for s in seen["sources"]["sources"]}
    assert {"version", "fresh", "stale_reason", "last_sync"} <= listed["sigma"].keys()
    assert listed["sigma"]["uri"] == "secrag://sources/sigma" and seen["sigma"]["version"] == listed["sigma"]["version"]
    assert "mitre_id" in seen["plans"]["plans"]
    assert seen["unknown"]["kind"] == "not_found" and "sigma" in seen["unknown"]["hint"]
    assert seen["prompts"] == {"map_report", "triage_artefact", "coverage_for_group"}
    assert "`coverage`" in seen["prompt"] and "G0016" in seen["prompt"]


def test_official_client_over_streamable_http(live_api: str) -> None:
    async def main() -> dict[str, Any]:
        async with streamable_http_client(f"{live_api}/mcp/") as (read, write), ClientSession(read, write) as session:
            return await _exercise(session)

    _check(anyio.run(main))


def test_official_client_over_stdio(serving_db_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": serving_db_url, "SECRAG_ANONYMOUS_RATE_PER_MINUTE": "0"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "secrag_cli.main", "mcp"], env=env)

    async def main() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await _exercise(session)

    _check(anyio.run(main))
