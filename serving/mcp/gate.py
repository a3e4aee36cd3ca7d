"""The MCP gate: every request (initialize, ping, listings, prompts, resources, tool calls) takes its caller's
key, rate and a slot, and counts among the API's requests in flight while it runs, as every /v1 operation does;
tools and resources read the caller it admitted.

A refused tool call answers as a tool error ({kind, detail, hint}, as any tool failure); any other refused
request as a JSON-RPC error carrying the same. Notifications (no answer to refuse with) pass through.
"""

from __future__ import annotations

from contextlib import ExitStack
from contextvars import ContextVar
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS

from serving.access.quotas import Caller, Gate
from serving.contract.errors import PublicError, public_error
from serving.mcp.errors import error_result, hint
from serving.observability.in_flight import InFlight

_admitted: ContextVar[Caller | None] = ContextVar("secrag_mcp_caller", default=None)


def current_caller() -> Caller:
    """The caller the gate admitted for the request under way (fails closed outside one)."""
    caller = _admitted.get()
    if caller is None:
        raise RuntimeError("an MCP handler ran outside the gate")
    return caller


def request_caller(request: Any, gate: Gate, default_key: str | None) -> Caller:  # noqa: ANN401 - any transport's
    """The caller of one request: its key from the HTTP headers, or the server's own key over stdio."""
    headers = getattr(request, "headers", None)
    if headers is None:
        return gate.caller(default_key, "stdio")
    key = headers.get("x-api-key")
    auth = headers.get("authorization", "")
    if not key and auth.lower().startswith("bearer "):
        key = auth[7:].strip()
    client = getattr(request, "client", None)
    return gate.caller(key, getattr(client, "host", None) or "mcp")


def protocol_error(error: PublicError, hint_text: str = "") -> MCPError:
    """A refused or failed request: a JSON-RPC error carrying the same {kind, detail, hint} as a tool's."""
    code = INVALID_PARAMS if error.status < 500 else INTERNAL_ERROR
    data = {"kind": error.kind, "detail": error.detail, "hint": hint_text or hint(error)}
    return MCPError(code=code, message=f"{error.kind}: {error.message()}", data=data)


class GateMiddleware:
    """The MCP server's outermost check of each request (serving/mcp/tools.py installs it)."""

    def __init__(self, gate: Gate, default_key: str | None, in_flight: InFlight | None = None) -> None:
        self._gate, self._default_key = gate, default_key
        self._in_flight = in_flight  # the API's requests in flight, which this one joins while it runs

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:
            return await call_next(ctx)
        with ExitStack() as held:
            try:
                caller = request_caller(ctx.request, self._gate, self._default_key)
                held.enter_context(self._gate.slot(caller))
                if self._in_flight is not None:
                    held.enter_context(self._in_flight.counting())
            except Exception as exc:  # noqa: BLE001 - every refusal is mapped, none leaks internals
                return _refused(ctx.method, public_error(exc))
            token = _admitted.set(caller)
            try:
                return await call_next(ctx)
            finally:
                _admitted.reset(token)


def _refused(method: str, error: PublicError) -> HandlerResult:
    if method == "tools/call":
        return error_result(error)
    raise protocol_error(error)
