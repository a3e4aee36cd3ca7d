"""Maps share the process's turns of map work fairly between callers, over REST and MCP alike, and every
request (REST and MCP) counts among the requests in flight that the maps' idle check reads (issue 53, item 3).

The API is served by uvicorn on a loopback port over the real store; the assertions are on the order of
events and on counts, never on times."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np
import pytest
import uvicorn

from serving.api.app import create_app
from serving.api.deps import get_searcher
from serving.settings import ServingSettings

from .test_map_budget import Faulty
from .test_mcp import HEADERS

FLOODER, OTHER = "alice-key", "bob-key"
HUNG = 300.0  # bounds a hung test only: every wait below is for an event


class Served:
    """An API served by uvicorn on a loopback port: its base URL and its app (for the service's counts)."""

    def __init__(self, settings: ServingSettings, sock: socket.socket) -> None:
        self.app = create_app(settings)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    @property
    def service(self) -> Any:  # noqa: ANN401
        return self.app.state.service

    def map(self, via: str, key: str, text: str) -> dict[str, Any]:
        """A map over REST (POST /v1/map) or MCP (the tool `map`), as `key`."""
        with httpx.Client(base_url=self.url, timeout=HUNG) as http:
            if via == "rest":
                response = http.post("/v1/map", json={"text": text}, headers={"X-API-Key": key})
                assert response.status_code == 200, response.text
                return dict(response.json())
            call = {"name": "map", "arguments": {"text": text}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
            response = http.post("/mcp/", json=body, headers={**HEADERS, "x-api-key": key})
            assert response.status_code == 200, response.text
            result = response.json()["result"]
            assert not result.get("isError"), result
            return dict(result.get("structuredContent") or json.loads(result["content"][0]["text"]))


@pytest.fixture
def served(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def serve(**settings: Any) -> Served:  # noqa: ANN401
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        api = Served(settings_for(serving_db_url, mcp_allowed_hosts=[f"127.0.0.1:{port}"], **settings), sock)
        api.thread.start()
        started.append(api)
        until(lambda: api.server.started or not api.thread.is_alive())
        assert api.server.started, "uvicorn did not start"
        return api

    yield serve
    for api in started:
        api.server.should_exit = True
        api.thread.join(HUNG)


def until(condition: Callable[[], bool]) -> None:
    """Waits for an event the test caused (bounded only against a hung test)."""
    deadline = time.monotonic() + HUNG
    while not condition():
        assert time.monotonic() < deadline, "the awaited event never came"
        time.sleep(0.01)


def sentences(word: str, count: int) -> str:
    return " ".join(f"The operators ran {word} number {i} on host {i} of the victim network." for i in range(count))


@dataclass(frozen=True)
class Recording(Faulty):
    """Faulty (a delay its only fault), recording each map's first encoding too: ("encode", its first sentence)."""

    def query_vectors(self, queries: Sequence[str]) -> list[np.ndarray]:
        with self.counts.lock:
            self.events.append(("encode", queries[0]))
        return super().query_vectors(queries)


@pytest.mark.parametrize(("flood_via", "other_via"), [("rest", "mcp"), ("mcp", "rest")])
def test_one_callers_maps_do_not_starve_anothers(served: Callable[..., Served], flood_via: str, other_via: str) -> None:
    """One turn of map work at a time, one search per map. The first caller has eight maps of 30 sentences
    running and waiting for turns when the second caller's map of twelve comes. From the second map's first
    turn (its encoding) to its last search, turns alternate between the two callers: each of its turns is
    followed by one of the first caller's, which always has more waiting, so neither caller's turns run back
    to back while the other waits (a thread that gives its turn back does not take it again at once, as it
    did when turns were a semaphore). Every map answers whole."""
    api = served(map_process_concurrency=1, map_concurrency=1, map_timeout_seconds=600)
    capacity = api.service.map_capacity
    recording = Recording.around(api.service.model.current(), delay=0.02)  # the flood outlasts the other map
    api.service.model.searcher = recording  # MCP tools search with the serving model's searcher
    api.app.dependency_overrides[get_searcher] = lambda: recording
    flooded: list[dict[str, Any]] = []
    floods = [
        threading.Thread(target=lambda i=i: flooded.append(api.map(flood_via, FLOODER, sentences(f"tool{i}", 30))))
        for i in range(8)
    ]
    for thread in floods:
        thread.start()
    until(lambda: capacity.maps() == 8 or bool(flooded))  # every one of them has started
    answer = api.map(other_via, OTHER, sentences("loader", 12))
    for thread in floods:
        thread.join(HUNG)
    assert answer["sentences"] == 12 and answer["unanswered"] == []
    assert len(flooded) == 8 and all(a["unanswered"] == [] for a in flooded)
    turns = [("other" if "loader" in query else "flood", kind) for kind, query in recording.events if kind != "end"]
    first = turns.index(("other", "encode"))
    last = len(turns) - 1 - [who for who, _ in turns][::-1].index("other")
    between = [who for who, _ in turns[first : last + 1]]
    assert between.count("other") == 13  # its encoding and twelve searches
    after = [who for who, _ in turns[last + 1 :]]
    assert after.count("flood") > 0  # the flood still ran when the other map ended: it waited throughout
    assert between.count("flood") >= 12, between  # one of the flood's after each of its turns
    assert capacity.held() == 0 and capacity.waiting() == {}


def test_mcp_requests_count_in_flight(served: Callable[..., Served]) -> None:
    """An MCP request is in flight while it runs, as a /v1 request is: a map over MCP whose search is held in
    a statement is one request in flight (and one map), until it answers at its deadline."""
    api = served(map_timeout_seconds=5.0, map_concurrency=1, reader_statement_timeout_ms=600_000)
    service = api.service
    faulty = Faulty.around(service.model.current(), hold_after=0)
    service.model.searcher = faulty  # MCP tools search with the serving model's searcher
    api.app.dependency_overrides[get_searcher] = lambda: faulty
    seen: list[tuple[int, int]] = []
    answers: list[dict[str, Any]] = []
    mapping = threading.Thread(target=lambda: answers.append(api.map("mcp", OTHER, sentences("tool", 1))))
    mapping.start()
    until(lambda: bool(faulty.events))  # the map's search is held in its statement
    seen.append((service.metrics.in_flight(), service.map_capacity.maps()))
    mapping.join(HUNG)
    until(lambda: service.metrics.in_flight() == 0)  # and out of flight once answered
    assert seen == [(1, 1)] and service.map_capacity.maps() == 0
    [answer] = answers
    assert [u["reason"] for u in answer["unanswered"]] == ["timeout"]
