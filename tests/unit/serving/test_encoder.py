"""The query encoder's cache, counters and micro-batching, over a fast deterministic stand-in model."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from secrag.errors import ConfigError
from serving.search.encoder import QueryEncoder, make_model
from serving.settings import ServingSettings

DIMS = 8


def vector_of(text: str) -> np.ndarray:
    v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


class StandIn:
    """Encodes texts deterministically; can hold a run (gate), slow it down or fail it."""

    model_id = "stand-in"
    dimensions = DIMS

    def __init__(self, *, delay: float = 0.0) -> None:
        self.delay = delay
        self.gate: threading.Event | None = None
        self.running = threading.Event()
        self.fail: Exception | None = None
        self.batches: list[list[str]] = []
        self.threads: list[int] = []

    def load(self) -> None:
        pass

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        self.threads.append(threading.get_ident())
        self.running.set()
        if self.gate is not None:
            assert self.gate.wait(10)
        time.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        return np.stack([vector_of(t) for t in texts])

    encode_queries = encode  # no prefix: the stand-in's query vectors are its text's


def wait_for(condition, timeout: float = 10.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_lone_caller_runs_the_model_on_its_own_thread() -> None:
    model = StandIn()
    encoder = QueryEncoder(model)
    assert np.array_equal(encoder.encode("mimikatz"), vector_of("mimikatz"))
    assert model.batches == [["mimikatz"]] and model.threads == [threading.get_ident()]


def test_cache_hits_misses_and_eviction() -> None:
    model = StandIn()
    encoder = QueryEncoder(model, cache_size=2)
    first = encoder.encode("a")
    assert encoder.encode("a") is first and not first.flags.writeable
    encoder.encode("b")
    encoder.encode("c")  # evicts "a", the least recently used
    encoder.encode("a")
    info = encoder.cache_info()
    assert {k: info[k] for k in ("hits", "misses", "size", "max_size", "runs", "encoded")} == {
        "hits": 1,
        "misses": 4,
        "size": 2,
        "max_size": 2,
        "runs": 4,
        "encoded": 4,
    }
    assert info["encode_ms"] >= 0 and info["backend"] == "onnx"
    encoder.clear_cache()
    assert encoder.cache_info()["size"] == encoder.cache_info()["misses"] == 0


def test_cache_size_zero_disables_the_cache() -> None:
    model = StandIn()
    encoder = QueryEncoder(model, cache_size=0)
    encoder.encode("a")
    encoder.encode("a")
    info = encoder.cache_info()
    assert (info["hits"], info["misses"], info["size"], info["runs"]) == (0, 2, 0, 2)


def test_many_queries_at_once_share_one_run_past_the_batch_size() -> None:
    model = StandIn()
    encoder = QueryEncoder(model, max_batch=4)
    encoder.encode("cached")
    texts = ["cached", *(f"sentence {i}" for i in range(10)), "sentence 3"]  # a cached one and a repeat
    vectors = encoder.encode_many(texts)
    assert [v.tolist() for v in vectors] == [vector_of(t).tolist() for t in texts]
    assert model.batches == [["cached"], [f"sentence {i}" for i in range(10)]]  # the misses, once each
    info = encoder.cache_info()
    assert (info["hits"], info["misses"], info["runs"]) == (1, 11, 2)
    assert encoder.encode_many([]) == [] and len(model.batches) == 2


def test_many_queries_wait_for_a_run_under_way_and_lead_the_next() -> None:
    model = StandIn()
    model.gate = threading.Event()
    encoder = QueryEncoder(model, cache_size=0, max_batch=2)
    first = threading.Thread(target=encoder.encode, args=("lone query",))
    first.start()
    assert model.running.wait(10)
    result: list[list[np.ndarray]] = []
    bulk = threading.Thread(target=lambda: result.append(encoder.encode_many(["a", "b", "c"])))
    bulk.start()
    wait_for(lambda: encoder.cache_info()["misses"] == 4)
    model.gate.set()
    for t in (first, bulk):
        t.join(10)
    assert model.batches == [["lone query"], ["a", "b", "c"]]
    assert [v.tolist() for v in result[0]] == [vector_of(t).tolist() for t in "abc"]


def test_queries_arriving_during_a_run_share_the_next_runs() -> None:
    model = StandIn()
    model.gate = threading.Event()
    encoder = QueryEncoder(model, cache_size=0, max_batch=16)
    texts = [f"query {i}" for i in range(21)]
    results: dict[str, np.ndarray] = {}

    def call(text: str) -> None:
        results[text] = encoder.encode(text)

    first = threading.Thread(target=call, args=(texts[0],))
    first.start()
    assert model.running.wait(10)  # the first caller holds the model ...
    others = [threading.Thread(target=call, args=(t,)) for t in texts[1:]]
    for t in others:
        t.start()
    wait_for(lambda: encoder.cache_info()["misses"] == len(texts))  # ... while 20 more queue up
    model.gate.set()
    for t in [first, *others]:
        t.join(10)
    assert sorted(len(b) for b in model.batches) == [1, 4, 16]
    assert {t: v.tolist() for t, v in results.items()} == {t: vector_of(t).tolist() for t in texts}
    assert encoder.cache_info()["runs"] == 3


def test_many_threads_get_their_own_vectors_in_fewer_runs() -> None:
    model = StandIn(delay=0.002)
    encoder = QueryEncoder(model, cache_size=0)
    texts = [f"thread {t} query {i % 7}" for t in range(8) for i in range(12)]  # repeats too
    results: dict[int, list[tuple[str, np.ndarray]]] = {}

    def worker(n: int) -> None:
        mine = texts[n * 12 : (n + 1) * 12]
        results[n] = [(t, encoder.encode(t)) for t in mine]

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    pairs = [p for n in range(8) for p in results[n]]
    assert len(pairs) == len(texts)
    assert all(np.array_equal(v, vector_of(t)) for t, v in pairs)
    assert max(len(b) for b in model.batches) <= 16
    assert len(model.batches) < len(texts)


def test_a_failing_run_reaches_every_waiting_caller_and_is_not_cached() -> None:
    model = StandIn()
    model.gate = threading.Event()
    model.fail = RuntimeError("model broke")
    encoder = QueryEncoder(model)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def call(text: str) -> None:
        try:
            encoder.encode(text)
        except RuntimeError as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=call, args=(f"q{i}",)) for i in range(6)]
    threads[0].start()
    assert model.running.wait(10)
    for t in threads[1:]:
        t.start()
    wait_for(lambda: encoder.cache_info()["misses"] == 6)
    model.gate.set()
    for t in threads:
        t.join(10)
    assert len(errors) == 6 and all(str(e) == "model broke" for e in errors)
    assert len(model.batches) == 2
    model.fail = None
    assert np.array_equal(encoder.encode("q1"), vector_of("q1"))  # the encoder still works afterwards
    assert encoder.cache_info()["size"] == 1


def test_a_wrong_shape_from_the_model_is_an_error() -> None:
    model = StandIn()
    encoder = QueryEncoder(model)
    model.dimensions = DIMS + 1  # type: ignore[misc]
    with pytest.raises(RuntimeError, match="shape"):
        encoder.encode("x")


def test_settings_defaults_and_unknown_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "SECRAG_QUERY_ENCODER",
        "SECRAG_QUERY_ENCODER_THREADS",
        "SECRAG_QUERY_CACHE_SIZE",
        "SECRAG_MODEL_CACHE_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = ServingSettings(_env_file=None)  # type: ignore[call-arg]
    assert (
        settings.query_encoder,
        settings.query_encoder_threads,
        settings.query_cache_size,
        settings.model_cache_dir,
    ) == ("onnx", 1, 1024, None)
    monkeypatch.setenv("SECRAG_QUERY_ENCODER", "tensorflow")
    with pytest.raises(ValueError, match="query_encoder"):
        ServingSettings(_env_file=None)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="unknown query encoder"):
        make_model("all-MiniLM-L6-v2", "tensorflow")
