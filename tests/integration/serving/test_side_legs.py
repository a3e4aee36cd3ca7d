"""The voter legs on a second connection (serving/search/side_legs.py): the same answers as in one
statement, a second pooled connection only while a core is idle, and the search still answers when no
spare connection comes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.search.side_legs import SideLegs
from serving.settings import ServingSettings

from .conftest import search

BODIES: list[dict[str, Any]] = [
    {"query": "attackers dump credentials from the memory of the lsass process", "k": 10},
    {"query": "a scheduled task created for persistence", "k": 10, "filters": {"sources": ["sigma"]}},
    {"query": "dump lsass memory with procdump", "k": 10, "vec_k": 300},  # a wider HNSW list on both connections
    {"query": "T1003 credential dumping", "k": 10, "group_by_doc": True},
]


@pytest.fixture(scope="module")
def apps(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[dict[str, TestClient]]:
    """The API with the voter legs aside, in one statement, and aside with a one-connection pool."""
    made = {
        "aside": settings_for(serving_db_url, search_parallel_legs=True),
        "together": settings_for(serving_db_url, search_parallel_legs=False),
        "one connection": settings_for(serving_db_url, search_parallel_legs=True, pool_max_size=1),
    }
    with pytest.MonkeyPatch.context() as mp:  # as on CI's 2 cores, whatever this machine has
        mp.setattr("serving.search.side_legs.usable_cores", lambda: 2)
        clients = {name: TestClient(create_app(settings)) for name, settings in made.items()}
        for c in clients.values():
            c.__enter__()
    yield clients
    for c in clients.values():
        c.__exit__(None, None, None)


def _requests(client: TestClient) -> int:
    return int(client.app.state.service.pool.get_stats().get("requests_num", 0))  # type: ignore[attr-defined]


@pytest.mark.parametrize("body", BODIES, ids=lambda b: b["query"][:24])
def test_the_voter_legs_aside_give_the_same_answer(apps: dict[str, TestClient], body: dict[str, Any]) -> None:
    together = search(apps["together"], **body)
    assert together["results"]
    for name in ("aside", "one connection"):
        answer = search(apps[name], **body)
        assert [(r["chunk_id"], r["score"]) for r in answer["results"]] == [
            (r["chunk_id"], r["score"]) for r in together["results"]
        ], name


def test_the_voter_legs_planned_once_give_the_same_answer(apps: dict[str, TestClient]) -> None:
    """Their generic plan (generic_plan in sql/queries/serving.sql) against plans made for each search's values."""
    client = apps["together"]
    queries = client.app.state.service.sessions._queries  # type: ignore[attr-defined]
    shipped = queries.generic_plan
    answers = {}
    with pytest.MonkeyPatch.context() as mp:
        for name, plan in (("generic", shipped), ("custom", shipped.replace("generic_plan", "custom_plan"))):
            mp.setattr(queries, "generic_plan", plan)
            answers[name] = [[(r["chunk_id"], r["score"]) for r in search(client, **b)["results"]] for b in BODIES]
    assert answers["generic"] == answers["custom"]
    assert all(answers["generic"])


def test_a_prose_search_takes_a_second_connection_while_a_core_is_idle(apps: dict[str, TestClient]) -> None:
    aside, together = apps["aside"], apps["together"]
    body = BODIES[0]
    search(aside, **body)  # the pool grows to its spare connection
    for client, wanted in ((aside, 2), (together, 1)):
        before = _requests(client)
        search(client, **body)
        assert _requests(client) - before == wanted


def test_no_split_once_every_core_has_a_search() -> None:
    """With as many searches in flight as cores, start() declines at once (the caller runs the legs)."""
    never: Any = None  # start() declines before it reaches the pool
    side = SideLegs(pool=never, cores=2)
    with side.search(), side.search():
        assert side.start(lambda conn: None) is None
    assert SideLegs(pool=never, cores=1).start(lambda conn: None) is None
    assert SideLegs(pool=never, cores=4, enabled=False).start(lambda conn: None) is None


def test_no_split_once_every_core_has_a_request() -> None:
    """API requests in flight count too (serving/observability/in_flight.py): one that has not reached its search
    yet will want a core in a moment."""
    never: Any = None
    side = SideLegs(pool=never, cores=2, busy=lambda: 2)
    with side.search():
        assert side.start(lambda conn: None) is None
