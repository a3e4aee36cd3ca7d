"""Tool errors an agent can act on: an isError result whose content is JSON with the error's `kind` (the
stable word REST answers with), its `detail` and a `hint` naming the valid values where they form a
closed set (from the tool's input schema: modes, plans, strategies, ranges; from the store: sources)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp.types import CallToolResult, TextContent

from serving.contract.errors import PublicError
from serving.mcp.budget import compact

# Hints of the kinds whose remedy does not depend on the field.
KIND_HINTS: Mapping[str, str] = {
    "not_found": "check the id: documents are `source:record` (e.g. mitre_attack:T1003), chunk ids come from "
    "`search`; the sources you may see are in the secrag://sources resource",
    "key_required": "send an API key (X-API-Key or Authorization: Bearer over HTTP; `secrag mcp --api-key` "
    "or SECRAG_MCP_API_KEY over stdio)",
    "unknown_api_key": "the API key is not configured on this server; send a configured one",
    "too_many_requests": "wait and retry",
    "database_unavailable": "retry in a few seconds",
    "statement_timeout": "ask for less (fewer ids, a smaller k, limit or top) or retry later",
    "upstream_failed": "retry later, or ask for the stored form (live=false)",
    "upstream_timeout": "retry later, or ask for the stored form (live=false)",
    "answer_too_large": "ask for less: fewer ids or layer entries, shorter comments, a smaller k, limit or top",
    "upstream_too_large": "select top-level keys with `columns`, or read the document with get_document",
    "internal": "retry; if it persists, tell the server's operator",
    "database_error": "retry; if it persists, tell the server's operator",
}
TOOL_HINTS: Mapping[tuple[str, str], str] = {
    ("coverage", "not_found"): "actor: an ATT&CK group, software or campaign by name, alias or id (e.g. APT29, "
    "G0016); tactic: a short name (e.g. credential-access, lateral-movement) with platforms such as Windows",
    ("changes", "not_found"): "since: an ISO 8601 time (e.g. 2025-01-31T00:00:00Z) or a version listed for the "
    "source in secrag://sources",
}
_FIELD_PREFIXES = ("body", "query", "path")  # REST's location words, not a tool argument's


def error_result(
    error: PublicError, tool: str = "", schema: Mapping[str, Any] | None = None, *, hint_text: str | None = None
) -> CallToolResult:
    """The error as an MCP tool result (isError) carrying {kind, detail, hint} as JSON."""
    body = {"kind": error.kind, "detail": error.detail, "hint": hint_text or hint(error, tool, schema)}
    return CallToolResult(
        content=[TextContent(type="text", text=compact(body))], structured_content=body, is_error=True
    )


def hint(error: PublicError, tool: str = "", schema: Mapping[str, Any] | None = None) -> str:
    """What to send instead: per field error the field, what was wrong and what it accepts; else per kind."""
    if isinstance(error.detail, list) and error.detail:
        return "; ".join(_field_hint(e, schema) for e in error.detail[:5])
    retry = error.headers.get("Retry-After")
    base = TOOL_HINTS.get((tool, error.kind)) or KIND_HINTS.get(error.kind, "")
    return f"{base} (after {retry} s)" if retry and error.kind == "too_many_requests" else base


def _field_hint(error: Mapping[str, Any], schema: Mapping[str, Any] | None) -> str:
    loc = [str(p) for p in error.get("loc", ())]
    while loc and loc[0] in _FIELD_PREFIXES:
        loc = loc[1:]
    name = ".".join(loc) or "arguments"
    accepted = allowed(schema, loc) if schema is not None else ""
    return f"{name}: {accepted}" if accepted else f"{name}: {error.get('msg', '')}"


def allowed(schema: Mapping[str, Any], loc: Sequence[str]) -> str:
    """The values (a closed set) or the range the input schema accepts at loc, in words; '' when it names
    neither (a string's pattern says less than the error's own message, e.g. the valid sources)."""
    node = _at(schema, schema, loc)
    return _describe(schema, node) if node is not None else ""


def _resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(root, root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {}))
    return node


def _variants(root: Mapping[str, Any], node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The node's alternatives (anyOf / oneOf / allOf), the null one left out."""
    node = _resolve(root, node)
    alternatives = node.get("anyOf") or node.get("oneOf") or node.get("allOf")
    if not alternatives:
        return [node]
    return [v for alt in alternatives for v in _variants(root, alt) if v.get("type") != "null"]


def _at(root: Mapping[str, Any], node: Mapping[str, Any], loc: Sequence[str]) -> Mapping[str, Any] | None:
    if not loc:
        return node
    head, rest = loc[0], loc[1:]
    for variant in _variants(root, node):
        if head.isdigit() and "items" in variant:
            found = _at(root, variant["items"], rest)
        elif head in variant.get("properties", {}):
            found = _at(root, variant["properties"][head], rest)
        else:
            continue
        if found is not None:
            return found
    return None


def _describe(root: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for variant in _variants(root, node):
        if "enum" in variant:
            parts.append("one of " + ", ".join(map(repr, variant["enum"])))
        elif "const" in variant:
            parts.append(repr(variant["const"]))
        elif variant.get("type") in ("integer", "number"):
            low, high = variant.get("minimum", variant.get("exclusiveMinimum")), variant.get("maximum")
            if low is not None or high is not None:
                low, high = "-inf" if low is None else low, "inf" if high is None else high
                parts.append(f"{variant['type']} from {low} to {high}")
        elif variant.get("type") == "array" and "items" in variant:
            inner = _describe(root, variant["items"])
            if inner:
                parts.append(f"a list of items, each {inner}")
    return " or ".join(dict.fromkeys(parts))
