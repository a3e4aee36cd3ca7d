"""32 KB of full stops sent to /v1/map over HTTP, to the API served by uvicorn on a loopback port over the real
store: the map answers with an answer smaller than the question, within its own deadline (no sentence given up),
and /healthz answers while the map is in flight. The assertions are on the order of events, never on times:
the one sentence after the full stops is searched by a searcher that waits, once the 32 KB are split, until
the test has had its /healthz answer."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn

from serving.api.app import create_app
from serving.api.deps import get_searcher
from serving.search.searcher import Searcher
from serving.settings import ServingSettings

HUNG = 120.0  # bounds a hung test only: every wait below is for an event
DOTS = "." * 32_768
SENTENCE = "Then the actor dumped credentials from LSASS memory with procdump."


@dataclass(frozen=True)
class Waiting(Searcher):
    """The real searcher, except that a map's search (on its threads named map-N) says it started and then waits
    for `go`. A map searches with a copy (dataclasses.replace) that shares both events."""

    started: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)

    def search(self, request: Any, principal: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # noqa: ANN401
        if threading.current_thread().name.startswith("map"):
            self.started.set()
            assert self.go.wait(HUNG), "the test never let the map's search go"
        return super().search(request, principal, **kwargs)


@dataclass
class Served:
    url: str
    searcher: Waiting


@pytest.fixture
def served(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[Served]:
    """The API over the serving corpus, behind uvicorn on a loopback port, its map searches waiting."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(settings_for(serving_db_url, mcp_allowed_hosts=[f"127.0.0.1:{port}"]))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(int(HUNG / 0.05)):
        if server.started or not thread.is_alive():
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    searcher = Waiting(
        **{name: getattr(app.state.service.model.current(), name) for name in Searcher.__dataclass_fields__}
    )
    app.dependency_overrides[get_searcher] = lambda: searcher
    try:
        yield Served(f"http://127.0.0.1:{port}", searcher)
    finally:
        searcher.go.set()
        server.should_exit = True
        thread.join(HUNG)
        sock.close()


def _map(url: str, text: str) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=HUNG) as http:
        return http.post("/v1/map", json={"text": text})


def test_full_stops_alone_map_to_a_small_answer(served: Served) -> None:
    response = _map(served.url, DOTS)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["sentences"], answer["techniques"], answer["unanswered"]) == (0, [], [])
    assert len(response.content) < len(DOTS)  # no answer larger than its question
    assert not served.searcher.started.is_set()  # nothing to search
    with httpx.Client(base_url=served.url, timeout=HUNG) as http:
        assert http.get("/healthz").status_code == 200


def test_healthz_answers_while_a_map_of_full_stops_is_in_flight(served: Served) -> None:
    text = f"{DOTS}x {SENTENCE}"
    answers: list[httpx.Response] = []
    mapping = threading.Thread(target=lambda: answers.append(_map(served.url, text)))
    mapping.start()
    try:
        assert served.searcher.started.wait(HUNG), "the map never searched its one sentence"
        with httpx.Client(base_url=served.url, timeout=HUNG) as http:
            health = http.get("/healthz")  # the 32 KB split, the map's search waiting: the map is in flight
        assert health.status_code == 200
        assert mapping.is_alive() and answers == []  # answered before the map
    finally:
        served.searcher.go.set()
        mapping.join(HUNG)
    [response] = answers
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["sentences"] >= 1 and answer["unanswered"] == []  # every sentence searched within the deadline
    assert len(response.content) < len(text)
