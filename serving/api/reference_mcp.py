"""The MCP part of the API reference: tools (parameters, example call), resources and prompts, from the server."""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.types import Prompt, Resource, ResourceTemplate, Tool

from serving.api.reference_schema import REF, anchor, cell, field_table, model_link, type_text
from serving.mcp.tools import BUDGET

# A tool's description names the REST operation it is, e.g. "(POST /v1/search)"; the mode aliases name none.
_OPERATION = re.compile(r"\((GET|POST) (/v1/[^)\s]*)\)")


def operation_of(tool: Tool) -> tuple[str, str] | None:
    """The (method, path) of the REST operation a tool's description names, if it names one."""
    found = _OPERATION.search(tool.description or "")
    return (found.group(1), found.group(2)) if found else None


def example_call(tool: Tool, example: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC tools/call of the tool with the REST example's request (body fields, or its parameters)."""
    arguments = {**example.get("parameters", {}), **example.get("request", {})}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool.name, "arguments": arguments}}


def model_of(properties: dict[str, Any], models: dict[str, Any]) -> tuple[str, list[str]] | None:
    """The model whose fields a tool takes (all, or all but one or two), and the fields it leaves out."""
    names = set(properties)
    found = [
        (len(set(schema["properties"]) - names), name, sorted(set(schema["properties"]) - names))
        for name, schema in models.items()
        if names and names <= set(schema.get("properties", {})) and len(set(schema["properties"]) - names) <= 2
    ]
    return min(found)[1:] if found else None


def parameters(tool: Tool, models: dict[str, Any], shown: dict[str, str]) -> list[str]:
    """A tool's parameters: its model's fields by link, the same table as an earlier tool's by name, or a table."""
    schema = tool.input_schema
    properties = {k: v for k, v in schema.get("properties", {}).items() if k != BUDGET}
    if not properties:
        return [f"Parameters: `{BUDGET}` only."]
    model = model_of(properties, models)
    if model:
        name, left_out = model
        but = f" but {', '.join(f'`{f}`' for f in left_out)}" if left_out else ""
        return [f"Parameters: the fields of {model_link(REF + name)}{but}, and `{BUDGET}`."]
    table = field_table(properties, schema.get("required", []))
    key = "\n".join(table)
    if key in shown:
        return [f"Parameters: as [`{shown[key]}`](#{anchor(shown[key])})."]
    shown[key] = tool.name
    return table


def tool_section(
    tool: Tool, examples: dict[tuple[str, str], dict[str, Any]], models: dict[str, Any], shown: dict[str, str]
) -> list[str]:
    """One tool: description, parameters, and an example call where its REST operation has an example."""
    lines = [f"### `{tool.name}`", "", " ".join((tool.description or "").split()), ""]
    lines += parameters(tool, models, shown)
    operation = operation_of(tool)
    if operation and operation in examples:
        method, path = operation
        call = json.dumps(example_call(tool, examples[operation]), indent=2, ensure_ascii=False)
        lines += [
            "",
            f"Example (the result's `structuredContent` is the answer of [`{method} {path}`]"
            f"(#{anchor(f'{method} {path}')}), within `max_chars`):",
            "",
            "```json",
            call,
            "```",
        ]
    return [*lines, ""]


def resource_rows(resources: list[Resource], templates: list[ResourceTemplate]) -> list[str]:
    rows = [(r.uri, r.description or "") for r in resources] + [
        (t.uri_template, f"(template) {t.description or ''}") for t in templates
    ]
    return ["| URI | contents |", "|---|---|", *(f"| `{uri}` | {cell(text)} |" for uri, text in sorted(rows))]


def prompt_rows(prompts: list[Prompt]) -> list[str]:
    rows = []
    for prompt in sorted(prompts, key=lambda p: p.name):
        arguments = ", ".join(
            f"`{a.name}`{'' if a.required else ' (optional)'}: {a.description or ''}" for a in prompt.arguments or []
        )
        rows.append(f"| `{prompt.name}` | {cell(arguments)} | {cell(prompt.description or '')} |")
    return ["| prompt | arguments | what it asks for |", "|---|---|---|", *rows]


def mcp_part(
    instructions: str,
    tools: list[Tool],
    resources: list[Resource],
    templates: list[ResourceTemplate],
    prompts: list[Prompt],
    examples: dict[tuple[str, str], dict[str, Any]],
    models: dict[str, Any],
) -> list[str]:
    """The MCP chapter: the server's instructions, each tool by name, then the resources and prompts."""
    names = sorted(tool.name for tool in tools)
    index = ", ".join(f"[`{name}`](#{anchor(name)})" for name in names)
    lines = ["## MCP", "", " ".join(instructions.split()), "", f"Tools: {index}.", ""]
    budget = next((t.input_schema["properties"][BUDGET] for t in tools if BUDGET in t.input_schema["properties"]), None)
    if budget:
        lines += [f"Every tool takes `{BUDGET}` ({type_text(budget)}): {' '.join(budget['description'].split())}", ""]
    shown: dict[str, str] = {}
    for tool in sorted(tools, key=lambda t: t.name):
        lines += tool_section(tool, examples, models, shown)
    lines += ["### Resources", "", *resource_rows(resources, templates), ""]
    lines += ["### Prompts", "", *prompt_rows(prompts), ""]
    return lines
