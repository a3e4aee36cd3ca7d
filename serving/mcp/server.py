"""The MCP server class: MCPServer whose argument errors are structured tool errors."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from serving.contract.errors import PublicError, public_error
from serving.mcp.errors import error_result


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
