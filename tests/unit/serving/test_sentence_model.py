"""The sentence path's model (serving/search/sentence_model.py): the promoted (or pinned) model's encoder, loaded in
a background thread so no request waits for it, followed when the promoted model changes, and a failed load not
tried again before RETRY_AFTER_SECONDS."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace

import numpy as np
import psycopg
import pytest

from serving.search import sentence_model
from serving.search.catalog import Cached
from serving.search.encoder import QueryEncoder
from serving.search.sentence_model import SentenceModel

LOADER = "secrag-sentence-model"  # the loading thread's name


class FakeEncoder:
    """What the sentence model asks of an encoder: its id, dimensions, batch size and encode_many."""

    dimensions = 3
    max_batch = 4

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.encoded: list[list[str]] = []

    def encode_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.encoded.append(list(texts))
        return [np.full(self.dimensions, float(len(text)), dtype=np.float32) for text in texts]


class Encoders:
    """make_encoder: counts each model's loads, fails the ids in `failing`, and waits at `gate` while it is shut."""

    def __init__(self) -> None:
        self.loads: list[str] = []
        self.failing: set[str] = set()
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, model_id: str) -> QueryEncoder:
        self.loads.append(model_id)
        assert self.gate.wait(30), "the test never opened the gate"
        if model_id in self.failing:
            raise OSError(f"no weights for {model_id}")
        return FakeEncoder(model_id)  # type: ignore[return-value]


class Promoted:
    """read_promoted: the promoted model's id as the store tells it ("" for none), or an error."""

    def __init__(self, model_id: str = "") -> None:
        self.model_id = model_id
        self.error: Exception | None = None
        self.reads = 0

    def __call__(self) -> str:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return self.model_id


def _model(promoted: Promoted, encoders: Encoders, pinned: str | None = None) -> SentenceModel:
    # read on every call (the service reads it every SOURCES_TTL seconds)
    return SentenceModel(promoted, encoders, pinned=pinned, _promoted=Cached(-1.0))


def _loaded() -> None:
    """Wait for the loading threads started so far (bounded: a load that never ends fails the test)."""
    for thread in threading.enumerate():
        if thread.name == LOADER:
            thread.join(timeout=30)
            assert not thread.is_alive(), "the sentence model's load did not finish"


def _until(check: Callable[[], object]) -> object:
    """Poll `check` until it gives something (the background load); fails after a bounded number of tries."""
    for _ in range(3000):
        found = check()
        if found:
            return found
        time.sleep(0.01)
    raise AssertionError("the sentence model was never loaded")


@pytest.fixture(autouse=True)
def _no_leftover_loads() -> Iterator[None]:
    yield
    _loaded()


def test_nothing_serves_until_the_encoder_is_loaded_in_the_background() -> None:
    encoders = Encoders()
    encoders.gate.clear()
    model = _model(Promoted("trained-1"), encoders)
    assert model.encoder() is None  # the request does not wait for the load
    assert model.encode(["a line of a report"]) is None
    assert model.encoder() is None
    encoders.gate.set()
    encoder = _until(model.encoder)
    assert isinstance(encoder, FakeEncoder) and encoder.model_id == "trained-1"
    assert encoders.loads == ["trained-1"]  # asked many times, loaded once
    assert encoder.encoded == [["warm up"]]  # warmed before it serves


def test_encode_gives_the_model_id_with_one_vector_per_query() -> None:
    model = _model(Promoted("trained-1"), Encoders())
    model.encoder()
    _until(model.encoder)
    found = model.encode(["one", "three"])
    assert found is not None and found.model_id == "trained-1"
    assert [v.tolist() for v in found.vectors] == [[3.0] * 3, [5.0] * 3]


def test_the_promoted_model_is_followed() -> None:
    promoted, encoders = Promoted("trained-1"), Encoders()
    model = _model(promoted, encoders)
    model.encoder()
    _until(model.encoder)
    encoders.gate.clear()
    promoted.model_id = "trained-2"
    assert model.encoder() is None  # the old model's vectors are not the promoted ones any more
    encoders.gate.set()
    encoder = _until(model.encoder)
    assert isinstance(encoder, FakeEncoder) and encoder.model_id == "trained-2"
    promoted.model_id = ""  # nothing promoted (a rollback to none)
    assert model.encoder() is None and model.encode(["x y z"]) is None
    assert encoders.loads == ["trained-1", "trained-2"]


def test_a_pinned_model_is_served_whatever_is_promoted() -> None:
    promoted, encoders = Promoted("trained-1"), Encoders()
    model = _model(promoted, encoders, pinned="pinned-model")
    model.encoder()
    encoder = _until(model.encoder)
    assert isinstance(encoder, FakeEncoder) and encoder.model_id == "pinned-model"
    assert promoted.reads == 0 and encoders.loads == ["pinned-model"]


def test_none_pinned_turns_the_sentence_path_off() -> None:
    promoted, encoders = Promoted("trained-1"), Encoders()
    model = _model(promoted, encoders, pinned="none")
    assert model.encoder() is None and model.encode(["a line"]) is None
    _loaded()
    assert model.encoder() is None
    assert promoted.reads == 0 and encoders.loads == []


def test_nothing_promoted_loads_nothing() -> None:
    encoders = Encoders()
    model = _model(Promoted(""), encoders)
    assert model.encoder() is None
    _loaded()
    assert encoders.loads == []


def test_an_unreadable_store_keeps_the_model_in_service() -> None:
    promoted, encoders = Promoted("trained-1"), Encoders()
    model = _model(promoted, encoders)
    promoted.error = psycopg.OperationalError("connection lost")
    assert model.encoder() is None  # none loaded yet: none serves
    promoted.error = None
    model.encoder()
    _until(model.encoder)
    promoted.error = psycopg.OperationalError("connection lost")
    encoder = model.encoder()
    assert isinstance(encoder, FakeEncoder) and encoder.model_id == "trained-1"


def test_a_failed_load_is_not_tried_again_before_the_wait_is_over(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(sentence_model, "time", SimpleNamespace(monotonic=lambda: now[0]))
    encoders = Encoders()
    encoders.failing.add("trained-1")
    model = _model(Promoted("trained-1"), encoders)
    assert model.encoder() is None
    _loaded()
    assert encoders.loads == ["trained-1"]
    now[0] += sentence_model.RETRY_AFTER_SECONDS - 0.5
    for _ in range(3):  # every search meanwhile: the general model serves, no load
        assert model.encoder() is None
        _loaded()
    assert encoders.loads == ["trained-1"]
    encoders.failing.clear()
    now[0] += 0.5
    assert model.encoder() is None  # the wait is over: loaded again, in the background
    _loaded()
    encoder = model.encoder()
    assert isinstance(encoder, FakeEncoder) and encoder.model_id == "trained-1"
    assert encoders.loads == ["trained-1", "trained-1"]


def test_a_failed_model_does_not_hold_up_another(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(sentence_model, "time", SimpleNamespace(monotonic=lambda: now[0]))
    promoted, encoders = Promoted("broken"), Encoders()
    encoders.failing.add("broken")
    model = _model(promoted, encoders)
    model.encoder()
    _loaded()
    promoted.model_id = "trained-2"  # promoted within the wait: loaded at once
    assert model.encoder() is None
    _loaded()
    encoder = model.encoder()
    assert isinstance(encoder, FakeEncoder) and encoder.model_id == "trained-2"
    assert encoders.loads == ["broken", "trained-2"]
