"""The MCP server class: MCPServer whose argument errors are structured tool errors, and whose resource
reads know their request (a static resource's function takes no Context, but its caller is gated)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import AnyUrl, ValidationError

from serving.contract.errors import PublicError, public_error
from serving.mcp.errors import error_result

_reading: ContextVar[Context[Any, Any] | None] = ContextVar("secrag_mcp_resource_read", default=None)


def reading_context() -> Context[Any, Any] | None:
    """The Context of the resource read under way (None outside one)."""
    return _reading.get()


class SecragMCP(MCPServer[Any]):
    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """A call; an unknown tool or arguments its input schema refuses answer as a structured tool error."""
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            names = ", ".join(t.name for t in self._tool_manager.list_tools())
            unknown = PublicError(404, f"unknown tool {name[:80]!r}", kind="unknown_tool")
            return error_result(unknown, hint_text=f"valid tools: {names}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return error_result(public_error(exc.__cause__), name, tool.parameters)
            raise

    async def read_resource(self, uri: AnyUrl | str, context: Context[Any, Any] | None = None) -> Any:  # noqa: ANN401
        token = _reading.set(context)
        try:
            return await super().read_resource(uri, context)
        finally:
            _reading.reset(token)
