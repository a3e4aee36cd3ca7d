"""A map is many requests: charged to its caller by its searches, one deadline, queued searches cancelled, a
reserve of reader connections for other callers, and a failed search costing its sentence only (issue 43).

Faults are injected around the real searcher (a sentence's search raises, or waits before it searches); the
store, the model and the API are the real ones."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.api.deps import get_searcher
from serving.mapping.stoppable import Stoppable
from serving.search.searcher import Searcher
from serving.settings import ServingSettings

from .test_map import REPORT, SENTENCES, by_id


@dataclass
class Counts:
    """The map's searches started, running, and the most running at once."""

    started: int = 0
    running: int = 0
    most: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class Faulty(Searcher):
    """The real searcher, except that searches of sentences holding `fails` raise, every search first waits
    `delay` seconds, and each search after the first `hold_after` first runs a statement that outlasts any
    deadline on its connection (the map's). Counts the map's searches (they run on its threads named map-N;
    other requests' searches are not counted) and records their events, ("start" | "end", query), in order.
    A map searches with a copy (dataclasses.replace) that shares the counts and the events."""

    fails: str = ""
    delay: float = 0.0
    hold_after: int | None = None
    counts: Counts = field(default_factory=Counts)
    events: list[tuple[str, str]] = field(default_factory=list)
    seen: list[tuple[object, object]] = field(default_factory=list)  # each map search's (pool, side legs)

    @classmethod
    def around(cls, real: Searcher, **faults: Any) -> Faulty:  # noqa: ANN401
        return cls(**{f.name: getattr(real, f.name) for f in fields(Searcher)}, **faults)

    def search(self, request: Any, principal: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # noqa: ANN401
        if not threading.current_thread().name.startswith("map"):
            return super().search(request, principal, **kwargs)
        counts = self.counts
        with counts.lock:
            counts.started += 1
            counts.running += 1
            counts.most = max(counts.most, counts.running)
            held = self.hold_after is not None and counts.started > self.hold_after
            self.seen.append((self.pool, self.side))
            self.events.append(("start", request.query))
        try:
            time.sleep(self.delay)
            if held:
                with self.pool.connection() as conn:
                    conn.execute("SELECT pg_sleep(600) /* a held map search */")
            if self.fails and self.fails in request.query:
                raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
            return super().search(request, principal, **kwargs)
        finally:
            with counts.lock:
                counts.running -= 1
                self.events.append(("end", request.query))


@pytest.fixture
def faulty_app(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> Iterator[Callable[..., tuple[TestClient, Faulty]]]:
    clients: list[TestClient] = []

    def make(
        fails: str = "",
        delay: float = 0.0,
        hold_after: int | None = None,
        **settings: Any,  # noqa: ANN401
    ) -> tuple[TestClient, Faulty]:
        app = create_app(settings_for(serving_db_url, **settings))
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        real = app.state.service.model.current()
        faulty = Faulty.around(real, fails=fails, delay=delay, hold_after=hold_after)
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
    """One search at a time; the second runs a statement that outlasts the deadline. The map answers at its
    deadline with the sentence searched before it, the others unanswered (timeout), and only once the held
    statement was cancelled and its search ended: no search of the map runs after the answer, none of the
    queued ones ever starts, and its turn and connection are back."""
    text = " ".join(f"The operators ran tool number {i} on host {i} of the victim." for i in range(12))
    client, faulty = faulty_app(
        hold_after=1,
        map_timeout_seconds=5.0,
        map_concurrency=1,
        map_process_concurrency=1,
        reader_statement_timeout_ms=600_000,  # only the map's deadline ends the held statement
    )
    service = client.app.state.service  # type: ignore[attr-defined]
    answer = client.post("/v1/map", json={"text": text}).json()
    with faulty.counts.lock:  # the events up to the answer, as they were when it came
        events = list(faulty.events)
        running = faulty.counts.running
    held_turns = service.map_capacity.held()
    stats = service.pool.get_stats()

    assert answer["sentences"] == 12
    reasons = [u["reason"] for u in answer["unanswered"]]
    assert set(reasons) == {"timeout"}
    assert len(reasons) == 11  # every sentence but the one searched before the deadline
    [first, held] = list(dict.fromkeys(query for _, query in events))
    assert events == [("start", first), ("end", first), ("start", held), ("end", held)]  # all before the answer
    assert running == 0 and held_turns == 0
    assert stats["pool_size"] - stats["pool_available"] <= 1  # the map's connection is back (this test's own
    # requests hold none; the pool's checks may hold one a moment)
    with psycopg.connect(service.settings.database_url) as conn:
        stuck = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s",
            ("%a held map search%",),
        ).fetchone()
    assert stuck is not None and stuck[0] == 0  # the held statement was cancelled (this one's text is $1)


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
    assert faulty.counts.most <= 2
    # each on the map's own connections (its turns' share), never a second one for side legs
    assert faulty.seen and all(isinstance(pool, Stoppable) and side is None for pool, side in faulty.seen)


def test_a_map_is_charged_its_searches(faulty_app: Callable[..., tuple[TestClient, Faulty]]) -> None:
    client, _ = faulty_app(rate_per_minute=60)
    text = " ".join(f"The operators ran tool number {i} on host {i} of the victim." for i in range(25))
    headers = {"X-API-Key": "alice-key"}
    assert client.post("/v1/map", json={"text": text}, headers=headers).status_code == 200  # 25 of 60
    assert client.post("/v1/map", json={"text": text}, headers=headers).status_code == 200  # 50 of 60
    refused = client.post("/v1/map", json={"text": text}, headers=headers)
    assert refused.status_code == 429 and "60 requests a minute" in refused.json()["detail"]
    assert int(refused.headers["Retry-After"]) >= 1
