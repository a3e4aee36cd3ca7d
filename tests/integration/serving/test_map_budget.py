"""A map is many requests: charged to its caller by its searches, one deadline, queued searches cancelled, a
reserve of reader connections for other callers, and a failed search costing its sentence only (issue 43).

Faults are injected around the real searcher (a sentence's search raises, or waits before it searches); the
store, the model and the API are the real ones."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.api.deps import get_searcher
from serving.search.searcher import Searcher
from serving.settings import ServingSettings

from .test_map import REPORT, SENTENCES, by_id


class Faulty:
    """The real searcher, except that searches of sentences holding `fails` raise, and every search first waits
        `delay` seconds; counts the searches started and the most running at once (a map's searches run on its
    threads named map-N; other requests' searches are not counted)."""

    def __init__(self, real: Searcher, fails: str = "", delay: float = 0.0) -> None:
        self._real, self._fails, self._delay = real, fails, delay
        self._lock = threading.Lock()
        self.started = self.running = self.most = 0

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 - the real searcher's other parts
        return getattr(self._real, name)

    def search(self, request: Any, principal: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        if not threading.current_thread().name.startswith("map"):
            return self._real.search(request, principal, **kwargs)
        with self._lock:
            self.started += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(self._delay)
            if self._fails and self._fails in request.query:
                raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
            return self._real.search(request, principal, **kwargs)
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def faulty_app(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> Iterator[Callable[..., tuple[TestClient, Faulty]]]:
    clients: list[TestClient] = []

    def make(fails: str = "", delay: float = 0.0, **settings: Any) -> tuple[TestClient, Faulty]:  # noqa: ANN401
        app = create_app(settings_for(serving_db_url, **settings))
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        faulty = Faulty(app.state.service.model.current(), fails, delay)
        app.dependency_overrides[get_searcher] = lambda: faulty
        return client, faulty

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def test_a_failed_search_costs_its_sentence_only(faulty_app: Callable[..., tuple[TestClient, Faulty]]) -> None:
    client, _ = faulty_app(fails="PowerShell")
    response = client.post("/v1/map", json={"text": REPORT})
    assert response.status_code == 200, response.text
    answer = response.json()
    [unanswered] = answer["unanswered"]
    assert unanswered["reason"] == "statement_timeout"
    assert REPORT[unanswered["start"] : unanswered["end"]] == SENTENCES["powershell"]
    found = by_id(answer)
    assert "T1003.001" in found and "T1218.011" in found  # the other sentences still count
    assert "T1059.001" not in found


def test_the_deadline_answers_with_what_it_has_and_cancels_the_queue(
    faulty_app: Callable[..., tuple[TestClient, Faulty]],
) -> None:
    text = " ".join(f"The operators ran tool number {i} on host {i} of the victim." for i in range(12))
    client, faulty = faulty_app(delay=0.3, map_timeout_seconds=1.0, map_concurrency=1, map_process_concurrency=1)
    answer = client.post("/v1/map", json={"text": text}).json()
    assert answer["sentences"] == 12
    reasons = [u["reason"] for u in answer["unanswered"]]
    assert reasons and set(reasons) == {"timeout"} and len(reasons) < 12
    started = faulty.started
    time.sleep(1.0)  # had the queue been left, its searches would start one by one now
    assert faulty.started == started and faulty.running == 0
    assert started <= 12 - len(reasons) + 1  # the answered ones, and at most the one running at the deadline


def test_maps_never_take_the_reserved_connections(faulty_app: Callable[..., tuple[TestClient, Faulty]]) -> None:
    """Four maps at once, each allowed four searches at once and the process eight, on a pool of four with two
    reserved: at most two sentence searches run at any moment; the others' searches keep the other two."""
    client, faulty = faulty_app(
        delay=0.05, map_concurrency=4, map_process_concurrency=8, map_reserve_connections=2, pool_max_size=4
    )
    text = " ".join(f"The loader injected stage {i} into a running process." for i in range(6))
    answers: list[int] = []

    def one() -> None:
        answers.append(client.post("/v1/map", json={"text": text}).status_code)

    maps = [threading.Thread(target=one) for _ in range(4)]
    for thread in maps:
        thread.start()
    search = client.post("/v1/search", json={"query": "credential dumping", "k": 3})
    for thread in maps:
        thread.join(120)
    assert answers == [200] * 4 and search.status_code == 200
    assert faulty.most <= 2


def test_a_map_is_charged_its_searches(faulty_app: Callable[..., tuple[TestClient, Faulty]]) -> None:
    client, _ = faulty_app(rate_per_minute=60)
    text = " ".join(f"The operators ran tool number {i} on host {i} of the victim." for i in range(25))
    headers = {"X-API-Key": "alice-key"}
    assert client.post("/v1/map", json={"text": text}, headers=headers).status_code == 200  # 25 of 60
    assert client.post("/v1/map", json={"text": text}, headers=headers).status_code == 200  # 50 of 60
    refused = client.post("/v1/map", json={"text": text}, headers=headers)
    assert refused.status_code == 429 and "60 requests a minute" in refused.json()["detail"]
    assert int(refused.headers["Retry-After"]) >= 1
