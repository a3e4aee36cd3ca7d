"""The official MCP client against secrag: over streamable HTTP (a live uvicorn) and over stdio (`secrag mcp`)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from secrag.version import version as server_version


async def _exercise(session: ClientSession) -> dict[str, Any]:
    info = await session.initialize()
    tools = {t.name for t in (await session.list_tools()).tools}
    found = await session.call_tool("fts", {"query": "T1003", "k": 3})
    docs = await session.call_tool("get_documents", {"ids": ["mitre_attack:T1003"]})
    bad = await session.call_tool("search", {"query": "x", "filters": {"sources": ["nope"]}})
    return {
        "version": info.server_info.version,
        "tools": tools,
        "found": found.structured_content or json.loads(found.content[0].text),  # type: ignore[union-attr]
        "docs": docs.structured_content,
        "bad": (bad.is_error, json.dumps([c.model_dump() for c in bad.content])),
    }


def _check(seen: dict[str, Any]) -> None:
    assert seen["version"] == server_version() and seen["version"]
    assert {"search", "fts", "plan", "explain", "get_upstream", "get_chunks", "stats"} <= seen["tools"]
    assert seen["found"]["results"][0]["doc_id"] == "mitre_attack:T1003"
    assert [d["doc_id"] for d in seen["docs"]["documents"]] == ["mitre_attack:T1003"]
    assert seen["bad"][0] and "unknown source" in seen["bad"][1]


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
