"""How an MCP tool call reaches the Service: its failures as structured tool errors, its results as JSON
(within a response budget when asked), the signatures FastMCP reads its parameters from, and the transport's
DNS-rebinding protection. Its caller is the gate's (serving/mcp/gate.py)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from serving.contract.errors import public_error
from serving.mcp.budget import MAX_CHARS, MIN_CHARS, compact, fit
from serving.mcp.errors import error_result
from serving.mcp.priorities import priority

T = TypeVar("T")

MaxChars = Annotated[
    Annotated[int, Field(ge=MIN_CHARS, le=MAX_CHARS)] | None,
    Field(
        description=f"Response budget in characters ({MIN_CHARS:,}-{MAX_CHARS:,}) of the answer as compact JSON: "
        "within it the most useful fields come first (ids, titles, scores, sources, urls), long texts are "
        "shortened and lists trimmed from the end, and `budget` says what was cut. Unset: this deployment's "
        "default (SECRAG_MCP_MAX_CHARS)."
    ),
]


def budget_of(asked: int | None, default: int, max_answer_bytes: int) -> int:
    """A call's budget: the one it asks or the deployment's default, within SECRAG_MAX_ANSWER_BYTES (a character
    is at most four bytes of UTF-8)."""
    return min(asked or default, max_answer_bytes // 4)


def run_safely(call: Callable[[], T], tool: str = "", schema: dict[str, Any] | None = None) -> T | CallToolResult:
    """Run a Service call; a failure becomes its public form (serving.contract.errors.public_error) as a
    structured tool error (serving/mcp/errors.py)."""
    try:
        return call()
    except ToolError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure is mapped, none leaks internals
        return error_result(public_error(exc), tool, schema)


def within(answer: dict[str, Any], text: str, max_chars: int, tool: str) -> CallToolResult:
    """The answer (`text`: its compact JSON) fitted to its budget (serving/mcp/budget.py), its text the compact
    JSON the budget counts."""
    if len(text) <= max_chars:
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer)
    fitted = fit(answer, max_chars, priority(tool), text)
    return CallToolResult(content=[TextContent(type="text", text=compact(fitted))], structured_content=fitted)


def as_json(value: Any) -> dict[str, Any]:  # noqa: ANN401 - a response model or a plain dict
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value)


def tool_signature(params: list[inspect.Parameter]) -> tuple[inspect.Signature, dict[str, Any]]:
    ctx = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Context | None)
    everything = [*params, ctx]
    annotations = {p.name: p.annotation for p in everything} | {"return": dict[str, Any]}
    return inspect.Signature(everything, return_annotation=dict[str, Any]), annotations


def field_annotation(field: FieldInfo) -> Any:  # noqa: ANN401 - a typing form
    """The field's type with its constraints and docs, but not its default (the parameter carries that)."""
    docs = Field(alias=field.alias, description=field.description, examples=field.examples)
    return Annotated[(field.annotation, *field.metadata, docs)]


def transport_security(hosts: list[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection limited to the configured Host headers."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[f"http://{h}" for h in hosts]
    )
