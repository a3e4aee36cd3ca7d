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
    sentence = None  # no sentence model: nothing of the sentence path to load
    vectors = None
    ann = None  # no in-process index to build

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
    assert isinstance(took, float) and len(searcher.seen) == len(REQUESTS)  # a figure, not asserted
    assert any(r.levelno == logging.WARNING and "RuntimeError" in r.getMessage() for r in caplog.records)
    assert any(f"warmed up with {len(REQUESTS) - 2} of {len(REQUESTS)}" in r.getMessage() for r in caplog.records)


class SentenceModel:
    def __init__(self, encoder: Any, fail: bool = False) -> None:  # noqa: ANN401
        self._encoder, self.fail = encoder, fail

    def load_now(self) -> Any:  # noqa: ANN401
        if self.fail:
            raise OSError("weights unreadable")
        return self._encoder


class Vectors:
    enabled = True

    def __init__(self) -> None:
        self.loaded: list[tuple[str, str, int]] = []

    def load(self, model_id: str, source: str, dimensions: int) -> bool:
        self.loaded.append((model_id, source, dimensions))
        return True


class Encoder:
    model_id = "attack-minilm-0123456789-int8"
    dimensions = 384


def test_the_sentence_model_and_its_vectors_load_before_the_first_request() -> None:
    searcher = Searcher({})
    searcher.sentence, searcher.vectors = SentenceModel(Encoder()), Vectors()  # type: ignore[assignment]
    warm_up(searcher)  # type: ignore[arg-type]
    assert searcher.vectors.loaded == [  # type: ignore[attr-defined]
        (Encoder.model_id, "mitre_attack", 384),
        (Encoder.model_id, "mitre_attack_procedures", 384),
    ]
    assert len(searcher.seen) == len(REQUESTS)


def test_a_sentence_model_that_fails_to_load_does_not_stop_the_warm_up(caplog: pytest.LogCaptureFixture) -> None:
    searcher = Searcher({})
    searcher.sentence, searcher.vectors = SentenceModel(Encoder(), fail=True), Vectors()  # type: ignore[assignment]
    with caplog.at_level(logging.INFO, logger="serving.api.warm_up"):
        warm_up(searcher)  # type: ignore[arg-type]
    assert searcher.vectors.loaded == [] and len(searcher.seen) == len(REQUESTS)  # type: ignore[attr-defined]
    assert any("sentence path" in r.getMessage() for r in caplog.records)
