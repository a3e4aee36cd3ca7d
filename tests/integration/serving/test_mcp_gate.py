"""Every MCP method (the handshake, listings, prompts, resources, tool calls) takes the caller's key, rate and a
slot as every /v1 operation does (serving/mcp/gate.py): with SECRAG_REQUIRE_API_KEY=true nothing is answered
without a key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.settings import ServingSettings

from .test_mcp import rpc

INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
METHODS: list[tuple[str, dict[str, Any]]] = [
    ("initialize", INITIALIZE),
    ("ping", {}),
    ("tools/list", {}),
    ("tools/call", {"name": "list_plans", "arguments": {}}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "map_report", "arguments": {"report": "The actor dumped LSASS memory."}}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "secrag://plans"}),
]
IDS = [method for method, _ in METHODS]


def refusal(body: dict[str, Any]) -> str | None:
    """The kind of a refused request: a JSON-RPC error's, or a tool call's isError result's; None if answered."""
    if "error" in body:
        return str(body["error"]["data"]["kind"])
    result = body["result"]
    if result.get("isError"):
        return str(result["structuredContent"]["kind"])
    return None


@pytest.fixture(scope="module")
def keyed(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(serving_db_url, require_api_key=True))) as api:
        yield api


@pytest.mark.parametrize(("method", "params"), METHODS, ids=IDS)
def test_every_method_takes_the_key_when_keys_are_required(
    keyed: TestClient, method: str, params: dict[str, Any]
) -> None:
    assert refusal(rpc(keyed, method, params)) == "key_required"
    assert refusal(rpc(keyed, method, params, key="no-such-key")) == "unknown_api_key"
    assert refusal(rpc(keyed, method, params, key="alice-key")) is None


def test_a_refusal_says_what_to_send(keyed: TestClient) -> None:
    error = rpc(keyed, "tools/list", {})["error"]
    assert "API key" in error["data"]["hint"] and error["data"]["detail"]


def test_every_method_takes_the_callers_rate(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> None:
    settings = settings_for(serving_db_url, require_api_key=True, rate_per_minute=6)  # one request per 10 s
    with TestClient(create_app(settings)) as api:
        assert refusal(rpc(api, "tools/list", {}, key="alice-key")) is None
        for method, params in METHODS:
            assert refusal(rpc(api, method, params, key="alice-key")) == "too_many_requests", method
        assert refusal(rpc(api, "tools/list", {}, key="bob-key")) is None  # another key, its own rate


def test_every_method_takes_a_slot(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> None:
    settings = settings_for(serving_db_url, require_api_key=True, heavy_concurrency=1)
    app = create_app(settings)
    with TestClient(app) as api:
        gate = app.state.gate
        with gate.slot(gate.caller("alice-key", "elsewhere")):  # alice's one slot is busy
            for method, params in METHODS:
                assert refusal(rpc(api, method, params, key="alice-key")) == "too_many_requests", method
            assert refusal(rpc(api, "tools/list", {}, key="bob-key")) is None
        for method, params in METHODS:  # released: each call takes the slot and gives it back
            assert refusal(rpc(api, method, params, key="alice-key")) is None, method
