"""docs/api.md shows a request and its response for every REST operation of the OpenAPI document (the
OpenAPI example's request, under a `### `METHOD /path`` heading) and for every MCP tool (a `tools/call`)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from secrag.settings import REPO_ROOT
from serving.access.keys import ApiKeys
from serving.access.quotas import Gate
from serving.api.app import create_app
from serving.api.openapi import load_examples
from serving.mcp.tools import build_mcp
from serving.settings import ServingSettings

PAGE = REPO_ROOT / "docs" / "api.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_OPERATION = re.compile(r"^### `([A-Z]+) (/\S*)`$", re.MULTILINE)
_ANY_HEADING = re.compile(r"^#{1,3} ", re.MULTILINE)


def _blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of text as (language, body)."""
    return [(match.group(1), match.group(2)) for match in _FENCE.finditer(text)]


def _sections(text: str) -> dict[str, list[tuple[str, str]]]:
    """'METHOD /path' -> the fenced blocks under its heading, up to the next heading."""
    body = _FENCE.sub(lambda match: re.sub(r"[^\n]", " ", match.group(0)), text)  # same offsets, no fences
    found = {}
    for match in _OPERATION.finditer(body):
        following = _ANY_HEADING.search(body, match.end())
        end = following.start() if following else len(text)
        found[f"{match.group(1)} {match.group(2)}"] = _blocks(text[match.end() : end])
    return found


def _json(body: str) -> Any:  # noqa: ANN401 - any JSON value
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        return None


def _request_problems(method: str, path: str, http: str, example: dict[str, Any]) -> list[str]:
    """What differs between the page's HTTP request and the OpenAPI example's path parameters, query and body."""
    head, _, body = http.partition("\n\n")
    request_line = head.splitlines()[0].split(" ")
    if request_line[0] != method or len(request_line) != 3:
        return [f"the request line is {head.splitlines()[0]!r}"]
    target = urlsplit(request_line[1])
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))
    matched = re.fullmatch(pattern, target.path)
    if matched is None:
        return [f"{target.path} is not {path}"]
    sent: dict[str, Any] = {name: unquote(value) for name, value in matched.groupdict().items()}
    for name, values in parse_qs(target.query).items():
        sent[name] = values if len(values) > 1 else values[0]
    problems = []
    if sent != example.get("parameters", {}):
        problems.append(f"parameters {sent} are not the example's {example.get('parameters', {})}")
    if (_json(body) if body.strip() else None) != example.get("request"):
        problems.append("the body is not the example's request")
    return problems


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_every_operation_has_its_request_and_response(page: str) -> None:
    document = create_app(ServingSettings(mcp_enabled=False)).openapi()
    examples, sections = load_examples(), _sections(page)
    missing = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            name, example = f"{method.upper()} {path}", examples[operation["operationId"]]
            blocks = sections.get(name, [])
            if len(blocks) < 2 or blocks[0][0] != "http" or blocks[1][0] != "json":
                missing.append(f"{name}: no ```http request then ```json response under `### `{name}``")
                continue
            problems = _request_problems(method.upper(), path, blocks[0][1], example)
            missing += [f"{name}: {problem}" for problem in problems]
            response = _json(blocks[1][1])
            if not isinstance(response, dict) or set(response) != set(example["response"]):
                missing.append(f"{name}: the response is not JSON with the example's fields")
    assert not missing, "docs/api.md:\n" + "\n".join(missing)


def _tool_names() -> set[str]:
    settings = ServingSettings(mcp_enabled=False)
    server = build_mcp(lambda: None, Gate(ApiKeys({}), settings), lambda: None)  # type: ignore[arg-type,return-value]
    return {tool.name for tool in asyncio.run(server.list_tools())}


def test_every_mcp_tool_has_a_call_and_its_result(page: str) -> None:
    tools = _tool_names()
    blocks = _blocks(page)
    shown = set()
    for (_, request), (_, response) in zip(blocks, blocks[1:], strict=False):
        call, result = _json(request), _json(response)
        if not isinstance(call, dict) or call.get("method") != "tools/call":
            continue
        name = call["params"]["name"]
        assert name in tools, f"docs/api.md calls {name}, which is no tool"
        assert isinstance(result, dict) and "structuredContent" in result.get("result", {}), f"{name}: no result"
        shown.add(name)
    assert not tools - shown, "docs/api.md shows no tools/call and result of: " + ", ".join(sorted(tools - shown))
