"""Every answer within SECRAG_MAX_ANSWER_BYTES, over the real server (uvicorn on loopback, REST and MCP): the worst
case of each operation that takes a list (layers at and past their bounds, coverage, map, plan, search, docs,
chunks, lookups, changes) answers within the bound or is refused with a 413 `answer_too_large`; a layer past its
entry limit is a 422. At the smallest bound (64 KiB) most of them are refused; at the default bound they answer,
and the API process's peak RSS grows by at most MEMORY_GROWTH per request (read from /proc: the peak is reset
before the request, which is sent once before to leave first-use caches out)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from secrag.db import database
from serving.settings import ServingSettings

from .conftest import live_server

SMALLEST = 64 * 1024  # the least SECRAG_MAX_ANSWER_BYTES takes
DEFAULT = ServingSettings.model_fields["max_answer_bytes"].default
# The stated bound of one request's transient memory: eight times its answer's bound (measured on the test store:
# at most 2.5 MiB, for the layers at the entry limit; before the bound, 2,000 entries of the issue's layer took GBs).
MEMORY_GROWTH = 8 * DEFAULT
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}
REPORT = (
    "The actor sent phishing e-mails with macros. It ran PowerShell to download a loader. It dumped LSASS memory "
    "with Mimikatz. It moved laterally with PsExec. Scheduled tasks kept it on the hosts. It staged data in RAR "
    "archives. It sent the data over HTTPS to cloud storage. It cleared the event logs. "
) * 4

Case = tuple[str, str, dict[str, Any]]  # method, path, body or params


@pytest.fixture(scope="module")
def store(serving_db_url: str) -> dict[str, list[Any]]:
    """What the worst cases name: the store's Enterprise techniques with their tactics, documents and chunks."""
    with database.connect(serving_db_url) as conn:
        techniques = conn.execute(
            "SELECT id, tactics FROM mitre_techniques WHERE domain = 'enterprise' AND NOT revoked AND NOT deprecated "
            "AND cardinality(tactics) > 0 ORDER BY id"
        ).fetchall()
        docs = [r[0] for r in conn.execute("SELECT doc_id FROM documents ORDER BY length(body) DESC LIMIT 100")]
        chunks = [r[0] for r in conn.execute("SELECT chunk_id FROM chunks ORDER BY length(text) DESC LIMIT 100")]
    tactics = sorted({t for _, ts in techniques for t in ts})
    return {"techniques": techniques, "tactics": tactics, "docs": docs, "chunks": chunks}


def layer(name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "domain": "enterprise-attack", "versions": {"layer": "4.5"}, "techniques": entries}


def layer_cases(store: dict[str, list[Any]]) -> dict[str, Case]:
    every = [(t, c) for t, _ in store["techniques"] for c in store["tactics"]]  # any tactic of the domain
    repeated = (every * (2000 // len(every) + 1))[:2000]
    at_limit = [{"techniqueID": t, "tactic": c, "score": 1, "comment": "c" * 400} for t, c in repeated]
    issue = [{"techniqueID": "T1003", "tactic": f"tactic-{i:04d}", "comment": f"{i} " + "x" * 75} for i in range(2000)]
    hostile = "\x01" * 1000  # six bytes each in JSON, and in every entry's comment
    return {
        "layers at the entry limit": (
            "POST",
            "/v1/layers/compare",
            {"left": layer("left", at_limit), "right": layer("right", at_limit[:50]), "operation": "union"},
        ),
        "layers of the issue at the entry limit": (
            "POST",
            "/v1/layers/compare",
            {"left": layer("left", issue), "right": layer("right", []), "operation": "union"},
        ),
        "layers past the answer bound": (
            "POST",
            "/v1/layers/compare",
            {
                "left": layer(hostile, [{"techniqueID": t, "tactic": c} for t, c in every[:2000]]),
                "right": layer(hostile, [{"techniqueID": t, "tactic": c} for t, c in every[2000:4000]]),
                "operation": "union",
            },
        ),
    }


def other_cases(store: dict[str, list[Any]]) -> dict[str, Case]:
    every_technique = layer("all", [{"techniqueID": t} for t, _ in store["techniques"]])
    return {
        "coverage of a tactic": (
            "POST",
            "/v1/coverage",
            {"tactic": "defense-evasion", "analytics": True, "top": 10},
        ),
        "coverage of a layer": ("POST", "/v1/coverage", {"technique_layer": every_technique, "top": 10}),
        "map": ("POST", "/v1/map", {"text": REPORT, "limit": 100, "technique_layer": every_technique}),
        "plan": ("POST", "/v1/plan", {"query": "how do attackers dump lsass memory", "total_chunks": 100}),
        "search": (
            "POST",
            "/v1/search",
            {"query": "powershell", "k": 50, "return": {"text": True, "max_text_chars": 4000}},
        ),
        "docs": ("POST", "/v1/docs", {"ids": store["docs"]}),
        "chunks": ("POST", "/v1/chunks", {"ids": store["chunks"]}),
        "lookup": (
            "GET",
            "/v1/lookup",
            {"value": ["cmd.exe", "powershell.exe", "rundll32.exe", "certutil.exe", "version.dll"] * 20, "limit": 100},
        ),
        "changes": ("GET", "/v1/changes", {"limit": 1000}),
    }


def send(http: httpx.Client, case: Case) -> httpx.Response:
    method, path, body = case
    if method == "GET":
        return http.get(path, params=body)
    return http.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


def assert_refused_well(response: httpx.Response, bound: int) -> None:
    refused = response.json()
    assert refused["kind"] == "answer_too_large", refused
    assert f"{bound:,}" in refused["detail"] and "SECRAG_MAX_ANSWER_BYTES" in refused["detail"]


@pytest.fixture(scope="module")
def smallest(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[httpx.Client]:
    with live_server(serving_db_url, settings_for, max_answer_bytes=SMALLEST) as base:
        with httpx.Client(base_url=base, timeout=120) as http:
            yield http


@pytest.fixture(scope="module")
def default(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[httpx.Client]:
    with live_server(serving_db_url, settings_for) as base:
        with httpx.Client(base_url=base, timeout=120) as http:
            yield http


def test_every_worst_case_answers_within_the_smallest_bound_or_is_refused(
    smallest: httpx.Client, store: dict[str, list[Any]]
) -> None:
    answered: list[str] = []
    for name, case in {**layer_cases(store), **other_cases(store)}.items():
        response = send(smallest, case)
        assert response.status_code in (200, 413), (name, response.status_code, response.text[:300])
        assert len(response.content) <= SMALLEST, name
        if response.status_code == 413:
            assert_refused_well(response, SMALLEST)
        else:
            answered.append(name)
            if name in ("search", "docs", "chunks"):  # results trimmed to fit the bound, not refused
                assert response.json()["truncated"] is True, name
    assert "layers past the answer bound" not in answered and "layers at the entry limit" not in answered
    assert "layers of the issue at the entry limit" in answered  # 2,000 unknown tactics: one small entry
    assert {"search", "docs", "chunks"} <= set(answered)


def test_every_worst_case_answers_within_the_default_bound_and_memory(
    default: httpx.Client, store: dict[str, list[Any]]
) -> None:
    for name, case in {**layer_cases(store), **other_cases(store)}.items():
        send(default, case)  # first use: pools, caches, the encoder's arenas
        Path("/proc/self/clear_refs").write_text("5")  # the peak RSS from here: this request's
        before = _rss_bytes("VmRSS")
        response = send(default, case)
        growth = _rss_bytes("VmHWM") - before
        assert len(response.content) <= DEFAULT, name
        assert growth <= MEMORY_GROWTH, (name, growth)
        if name == "layers past the answer bound":
            assert response.status_code == 413, response.text[:300]
            assert_refused_well(response, DEFAULT)
            assert "per technique and tactic" in response.json()["detail"]  # how to ask for less
        else:
            assert response.status_code == 200, (name, response.status_code, response.text[:300])


def test_the_issues_layer_reports_its_tactics_and_its_comment_once(
    default: httpx.Client, store: dict[str, list[Any]]
) -> None:
    body = layer_cases(store)["layers of the issue at the entry limit"][2]
    body["right"] = layer("right", [{"techniqueID": "T1003", "tactic": store["tactics"][0], "comment": "kept"}])
    answer = default.post("/v1/layers/compare", json=body).json()
    assert answer["left"]["unknown_tactics"] == [f"tactic-{i:04d}" for i in range(2000)]
    assert answer["left"]["techniques"] == 0 and answer["right"]["unknown_tactics"] == []
    assert [(t["techniqueID"], t["tactic"]) for t in answer["layer"]["techniques"]] == [("T1003", store["tactics"][0])]
    assert answer["layer"]["techniques"][0]["comment"] == "not in left\nin right: kept"


def test_a_layer_past_its_entry_limit_is_a_422(default: httpx.Client, store: dict[str, list[Any]]) -> None:
    entries = [{"techniqueID": "T1003"}] * 2001
    response = default.post(
        "/v1/layers/compare",
        json={"left": layer("left", entries), "right": layer("right", []), "operation": "minus"},
    )
    assert response.status_code == 422 and response.json()["kind"] == "invalid_field"
    assert "2001 technique entries" in response.text


def test_the_mcp_tools_answer_within_the_bound_or_are_refused(
    smallest: httpx.Client, store: dict[str, list[Any]]
) -> None:
    cases = {**layer_cases(store), **other_cases(store)}
    refused = {"layers past the answer bound": True, "layers at the entry limit": True, "changes": True}
    for tool, name in (
        ("compare_layers", "layers past the answer bound"),  # refused from the estimate
        ("compare_layers", "layers at the entry limit"),
        ("compare_layers", "layers of the issue at the entry limit"),
        ("changes", "changes"),  # refused by the tools' last line of defence (74 KB on the test store)
        ("get_documents", "docs"),  # trimmed to fit (`truncated`)
    ):
        arguments = cases[name][2]
        result = tool_call(smallest, tool, arguments)
        text = result["content"][0]["text"]
        assert bool(result.get("isError")) == refused.get(name, False), (tool, name, text[:300])
        if result.get("isError"):
            error = json.loads(text)
            assert error["kind"] == "answer_too_large" and "SECRAG_MAX_ANSWER_BYTES" in error["detail"], error
            assert error["hint"]
        else:
            assert len(text.encode()) <= SMALLEST, (tool, name)


def tool_call(http: httpx.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = http.post("/mcp/", json=message, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text[:300]
    result: dict[str, Any] = response.json()["result"]
    return result


def _rss_bytes(field: str) -> int:
    """VmRSS or VmHWM of this process (the server runs in it), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")
