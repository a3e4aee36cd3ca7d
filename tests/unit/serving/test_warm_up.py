"""Warm-up is best effort: a failing or refused search is logged and skipped, never raised."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from serving.access.keys import Principal
from serving.api.warm_up import REQUESTS, warm_up
from serving.contract.errors import InvalidField
from serving.contract.requests import SearchRequest


class Searcher:
    def __init__(self, fail: dict[str, BaseException]) -> None:
        self.fail = fail
        self.seen: list[tuple[str, bool]] = []

    def search(self, req: SearchRequest, principal: Principal, *, cache: bool = True) -> Any:  # noqa: ANN401
        self.seen.append((req.query, cache))
        if req.query in self.fail:
            raise self.fail[req.query]
        return None


def test_every_request_is_valid_and_bypasses_the_result_cache() -> None:
    searcher = Searcher({})
    warm_up(searcher)  # type: ignore[arg-type]
    assert searcher.seen == [(str(body["query"]), False) for body in REQUESTS]


def test_failures_are_logged_and_the_rest_still_run(caplog: pytest.LogCaptureFixture) -> None:
    first, second = (str(body["query"]) for body in REQUESTS[:2])
    searcher = Searcher({first: RuntimeError("store down"), second: InvalidField(["body"], "unknown source")})
    with caplog.at_level(logging.INFO, logger="serving.api.warm_up"):
        took = warm_up(searcher)  # type: ignore[arg-type]
    assert took >= 0 and len(searcher.seen) == len(REQUESTS)
    assert any(r.levelno == logging.WARNING and "RuntimeError" in r.getMessage() for r in caplog.records)
    assert any(f"warmed up with {len(REQUESTS) - 2} of {len(REQUESTS)}" in r.getMessage() for r in caplog.records)
