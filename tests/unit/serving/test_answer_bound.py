"""SECRAG_MAX_ANSWER_BYTES: the estimate's check and the REST last line of defence (a /v1 answer over the bound is
replaced by a 413 before its first byte)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from serving.access.request_limits import RequestLimits
from serving.contract.errors import AnswerTooLarge, public_error
from serving.contract.limits import AnswerSizeLimit, BodySizeLimit, answer_bytes

BOUND = 64 * 1024


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/v1/items")
    def items(n: int) -> dict[str, list[str]]:
        return {"items": ["x" * 1000] * n}

    @app.get("/openapi-like")
    def outside(n: int) -> dict[str, list[str]]:
        return {"items": ["x" * 1000] * n}

    app.add_middleware(AnswerSizeLimit, max_bytes=BOUND, prefix="/v1")
    return app


def test_an_answer_within_the_bound_passes_untouched() -> None:
    response = TestClient(_app()).get("/v1/items", params={"n": 60})
    assert response.status_code == 200 and len(response.content) <= BOUND
    assert len(response.json()["items"]) == 60


def test_an_answer_over_the_bound_is_a_413_naming_it() -> None:
    response = TestClient(_app()).get("/v1/items", params={"n": 70})
    assert response.status_code == 413
    body = response.json()
    assert body["kind"] == "answer_too_large"
    assert "SECRAG_MAX_ANSWER_BYTES" in body["detail"] and f"{BOUND:,}" in body["detail"]
    assert "ask for less" in body["detail"]


def test_paths_outside_the_prefix_are_not_bounded() -> None:
    assert TestClient(_app()).get("/openapi-like", params={"n": 70}).status_code == 200


def test_the_estimate_refuses_before_building() -> None:
    limits = RequestLimits(max_answer_bytes=BOUND)
    limits.check_answer(BOUND, "send fewer entries")
    with pytest.raises(AnswerTooLarge) as refused:
        limits.check_answer(BOUND + 1, "send fewer entries")
    error = public_error(refused.value)
    assert (error.status, error.kind) == (413, "answer_too_large")
    assert "send fewer entries" in error.message() and "SECRAG_MAX_ANSWER_BYTES" in error.message()


def test_answer_bytes_counts_compact_utf8_json() -> None:
    assert answer_bytes({"a": ["é", 1]}) == len('{"a":["é",1]}'.encode())


def test_a_body_over_its_cap_is_the_same_error_body() -> None:
    app = FastAPI()

    @app.post("/v1/echo")
    def echo(body: dict[str, str]) -> dict[str, str]:
        return body

    app.add_middleware(BodySizeLimit, max_bytes=1024)
    response = TestClient(app).post("/v1/echo", json={"a": "x" * 2000})
    assert response.status_code == 413
    assert response.json() == {"detail": "request body larger than 1024 bytes", "kind": "too_large"}
