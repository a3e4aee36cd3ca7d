"""The REST operations as MCP tools (streamable HTTP at /mcp), calling the same Service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from .errors import public_error
from .plans import PlansConfig
from .quotas import Caller, Gate
from .schemas import IdsRequest, SearchFilters, SearchRequest
from .service import Service


def _caller(ctx: Context | None, gate: Gate) -> Caller:
    """The caller of a tool: its key from the HTTP headers (none over stdio), admitted by the gate."""
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
    headers = getattr(request, "headers", None) or {}
    key = headers.get("x-api-key")
    auth = headers.get("authorization", "")
    if not key and auth.lower().startswith("bearer "):
        key = auth[7:].strip()
    client = getattr(request, "client", None)
    return gate.caller(key, getattr(client, "host", None) or "mcp")


T = TypeVar("T")


def _safe(call: Callable[[], T]) -> T:
    """Run a Service call; a failure becomes its public message (serving.errors.public_error)."""
    try:
        return call()
    except ToolError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure is mapped, none leaks internals
        raise ToolError(public_error(exc).message()) from None


def build_mcp(get_service: Callable[[], Service], gate: Gate, plans: PlansConfig) -> MCPServer:
    """An MCP server whose tools are search, plan, get_documents, list_sources and stats."""
    server: MCPServer = MCPServer(
        name="secrag",
        instructions=(
            "Search security knowledge (ATT&CK, Sigma, Atomic Red Team, CISA KEV, LOLBAS, ...). "
            "Use `search` first, then `get_documents` for full bodies."
        ),
    )

    @server.tool(description="Hybrid/full-text/vector/fuzzy search; returns ranked chunks with scores.")
    def search(
        query: str,
        k: int = 10,
        mode: Literal["hybrid", "fts", "vector", "fuzzy"] = "hybrid",
        sources: list[str] | None = None,
        techniques: list[str] | None = None,
        platforms: list[str] | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            req = SearchRequest(
                query=query,
                k=k,
                mode=mode,
                filters=SearchFilters(sources=sources, techniques=techniques, platforms=platforms),
            )
            caller = _caller(ctx, gate)
            with gate.heavy(caller):
                return get_service().search(req, caller.principal).model_dump(mode="json")

        return _safe(run)

    @server.tool(
        description="A balanced, cited context for a question: techniques, detections, tests, "
        "forensic artifacts and vulnerabilities mixed by a retrieval plan."
    )
    def plan(
        query: str,
        plan: str | None = None,
        total_chunks: int | None = None,
        sources: list[str] | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        from .plan_schemas import PlanRequest
        from .planner import plan_context

        def run() -> dict[str, Any]:
            req = PlanRequest(query=query, plan=plan, total_chunks=total_chunks, filters=SearchFilters(sources=sources))
            caller = _caller(ctx, gate)
            with gate.heavy(caller):
                return plan_context(get_service(), plans, req, caller.principal).model_dump(mode="json")

        return _safe(run)

    @server.tool(description="Full documents by id (e.g. mitre_attack:T1003); unknown ids are listed as missing.")
    def get_documents(ids: list[str], ctx: Context | None = None) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            req = IdsRequest(ids=ids)
            return get_service().documents(req.ids, _caller(ctx, gate).principal).model_dump(mode="json")

        return _safe(run)

    @server.tool(description="Every source with its served version, freshness, record count and state.")
    def list_sources(ctx: Context | None = None) -> dict[str, Any]:
        return _safe(lambda: get_service().sources(_caller(ctx, gate).principal).model_dump(mode="json"))

    @server.tool(description="Store statistics: documents, chunks, embeddings per source and model, freshness.")
    def stats(ctx: Context | None = None) -> dict[str, Any]:
        from .schemas import StatsResponse

        return _safe(
            lambda: StatsResponse.model_validate(get_service().stats(_caller(ctx, gate).principal)).model_dump(
                mode="json"
            )
        )

    return server


def transport_security(hosts: list[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection limited to the configured Host headers."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[f"http://{h}" for h in hosts]
    )
