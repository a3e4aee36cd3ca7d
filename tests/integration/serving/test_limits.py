"""Limits and failures: 413, 422, response cap, statement timeout (504), database down (503) and recovery."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient
from psycopg import conninfo, sql

from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings

FORBIDDEN = ("Traceback", "SELECT ", "psycopg", "/work/", ".py", "statement timeout", "postgresql://")


def assert_clean(text: str) -> None:
    assert not any(marker in text for marker in FORBIDDEN), text


def test_body_over_one_mib_is_413(client: TestClient) -> None:
    big = '{"query": "' + "a" * (1024 * 1024) + '"}'
    response = client.post("/v1/search", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413

    def chunks() -> Iterator[bytes]:
        yield b'{"query": "'
        for _ in range(20):
            yield b"a" * 65536
        yield b'"}'

    streamed = client.post("/v1/search", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "é" * 8193}, "query"),
        ({"query": "x", "k": 0}, "k"),
        ({"query": "x", "k": 51}, "k"),
        ({"query": "x", "mode": "magic"}, "mode"),
        ({"query": "x", "filters": {"techniques": ["lsass"]}}, "techniques"),
        ({"query": "x", "unknown": 1}, "unknown"),
    ],
)
def test_invalid_requests_are_422_with_field_errors(client: TestClient, body: dict, field: str) -> None:
    response = client.post("/v1/search", json=body)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert any(field in [str(p) for p in e["loc"]] for e in detail)
    assert all(set(e) == {"loc", "msg", "type"} for e in detail)


def test_query_of_exactly_8192_characters_is_accepted(client: TestClient) -> None:
    assert client.post("/v1/search", json={"query": "é " * 4096, "k": 1}).status_code == 200


def test_unknown_source_lists_the_valid_ones(client: TestClient) -> None:
    response = client.post("/v1/search", json={"query": "x", "filters": {"sources": ["sigma", "sigmaa"]}})
    assert response.status_code == 422
    error = response.json()["detail"][0]
    assert error["loc"] == ["body", "filters", "sources", 1]
    assert "sigmaa" in error["msg"] and "mitre_attack" in error["msg"] and "acme_notes" not in error["msg"]


def test_response_cap_truncates(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> None:
    with TestClient(create_app(settings_for(serving_db_url, max_response_bytes=8192, mcp_enabled=False))) as small:
        payload = small.post(
            "/v1/search", json={"query": "powershell", "k": 50, "return": {"text": True, "max_text_chars": 2000}}
        ).json()
        assert payload["truncated"] is True and 0 < len(payload["results"]) < 50
        docs = small.post(
            "/v1/docs",
            json={"ids": ["mitre_attack:T1003", "mitre_attack:T1059", "mitre_attack:T1055", "mitre_attack:T1218"]},
        )
        assert docs.json()["truncated"] is True and len(docs.content) <= 8192


def test_statement_timeout_is_504_while_the_lock_is_still_held(serving_db_url: str, client: TestClient) -> None:
    """The search is cancelled by its statement timeout, not answered once the lock goes: the holder keeps
    the lock until the test lets it go, after the answer."""
    locked = threading.Event()
    release = threading.Event()
    let_go: list[bool] = []

    def hold_lock() -> None:
        with database.connect(serving_db_url) as conn:
            conn.execute("LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE")
            locked.set()
            let_go.append(release.wait(120))
            conn.rollback()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(10)
        response = client.post("/v1/search", json={"query": "lsass", "mode": "fts"})
    finally:
        release.set()
        holder.join()
    assert response.status_code == 504
    assert let_go == [True]  # the lock was held until after the answer
    assert_clean(response.text)
    assert client.post("/v1/search", json={"query": "lsass", "mode": "fts"}).status_code == 200


def test_database_down_is_503_and_recovers(
    db_url: str, pg_server_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    name = conninfo.conninfo_to_dict(db_url)["dbname"]
    admin = database.with_database(pg_server_url, "postgres")

    def allow(flag: bool) -> None:
        with database.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS {}").format(sql.Identifier(name), sql.Literal(flag))
            )
            if not flag:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])

    app = create_app(settings_for(db_url, mcp_enabled=False, pool_timeout=1.0))
    with TestClient(app) as api:
        assert api.get("/v1/sources").status_code == 200
        allow(False)
        try:
            for path in ("/v1/sources", "/v1/stats"):
                response = api.get(path)  # answered while the database still refuses
                assert response.status_code == 503 and response.headers["Retry-After"]
                assert_clean(response.text)
            assert api.get("/readyz").status_code == 503
            assert api.get("/healthz").status_code == 200
        finally:
            allow(True)
        deadline = time.monotonic() + 120  # bounds a hung test only
        while (response := api.get("/v1/sources")).status_code != 200:
            assert response.status_code == 503 and response.headers["Retry-After"]  # refused until it is back
            assert time.monotonic() < deadline, "the pool did not recover"
            time.sleep(0.2)
        assert api.get("/readyz").status_code == 200


def test_unexpected_errors_are_generic(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> None:
    """A broken search config path surfaces as a clean 500 body, never a traceback."""
    app = create_app(settings_for(serving_db_url, mcp_enabled=False))
    with TestClient(app, raise_server_exceptions=False) as api:
        app.state.service.model.searcher = None  # type: ignore[assignment]
        response = api.post("/v1/search", json={"query": "lsass"})
        assert response.status_code == 500 and response.json() == {"detail": "internal error", "kind": "internal"}


def test_a_900_word_query_is_answered(client: TestClient) -> None:
    """Hybrid ranks long prose within the vector pool by its rarest words: an OR of 900 words under
    ts_rank_cd ran into the statement timeout (504) before."""
    words = "process injection lsass memory dump credential powershell scheduled task registry persistence".split()
    query = " ".join(words[i % len(words)] for i in range(900))
    response = client.post("/v1/search", json={"query": query, "k": 5})
    assert response.status_code == 200, response.text[:200]
    assert response.json()["results"]


def test_request_limits_are_configuration_checked_and_stated(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    settings = settings_for(serving_db_url, max_k=10, max_candidates=100, max_query_chars=100)
    with TestClient(create_app(settings)) as api:
        document = api.get("/openapi.json").json()["components"]["schemas"]
        search = document["SearchRequest"]["properties"]
        assert search["k"]["maximum"] == 10 and search["query"]["maxLength"] == 100
        assert search["rerank_k"]["maximum"] == 100 and search["vec_k"]["anyOf"][0]["maximum"] == 100
        assert document["PlanRequest"]["properties"]["query"]["maxLength"] == 100
        assert api.post("/v1/search", json={"query": "lsass", "k": 10, "vec_k": 100}).status_code == 200
        for body, field in (
            ({"query": "lsass", "k": 11}, "k"),
            ({"query": "lsass", "k": 1, "vec_k": 101}, "vec_k"),
            ({"query": "x" * 101, "k": 1}, "query"),
        ):
            response = api.post("/v1/search", json=body)
            assert response.status_code == 422, body
            [error] = response.json()["detail"]
            assert error["loc"] == ["body", field] and "this deployment's SECRAG_MAX_" in error["msg"]
        planned = api.post("/v1/plan", json={"query": "x" * 101})
        assert planned.status_code == 422 and planned.json()["detail"][0]["loc"] == ["body", "query"]
        # The MCP tools state the same limits in their input schemas.
        listed = api.post(
            "/mcp/",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"},
        )
        tools = {t["name"]: t["inputSchema"]["properties"] for t in listed.json()["result"]["tools"]}
        for name in ("search", "hybrid", "fts"):
            assert tools[name]["k"]["maximum"] == 10 and tools[name]["query"]["maxLength"] == 100
            assert tools[name]["rerank_k"]["maximum"] == 100
        assert tools["plan"]["query"]["maxLength"] == 100
