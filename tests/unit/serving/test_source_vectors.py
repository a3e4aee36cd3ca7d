"""The sources' vectors held in memory (serving/search/source_vectors.py): exact nearest chunks in the SQL's
order, used only at the source's current version, loaded in the background, never beyond the budget."""

from __future__ import annotations

import dataclasses
import struct
import threading

import numpy as np
import pytest

from serving.search import source_vectors
from serving.search.source_vectors import Held, SourceVectors, unit_rows

DIM = 4


def _held(version: str, rows: dict[str, list[float]]) -> Held:
    ids = sorted(rows)
    matrix = np.asarray([rows[i] for i in ids], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return Held(version=version, chunk_ids=ids, doc_ids=[i.split("#")[0] for i in ids], matrix=matrix)


class Store:
    """What the loader reads: per source, its version and rows (the tests change them as a publish would)."""

    def __init__(self) -> None:
        self.sources = {
            "sigma": _held("v1", {"s:a#0": [1, 0, 0, 0], "s:b#0": [0.9, 0.1, 0, 0], "s:c#0": [0, 1, 0, 0]}),
            "lolbas": _held("v1", {"l:a#0": [1, 0, 0, 0], "l:b#0": [0, 0, 1, 0]}),
        }
        self.reads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def load(self, model_id: str, source: str, max_rows: int, dimensions: int) -> Held | None:
        self.gate.wait(5)
        self.reads.append(source)
        held = self.sources.get(source)
        if held is None:
            return None
        return dataclasses.replace(held, chunk_ids=held.chunk_ids[: max_rows + 1], doc_ids=held.doc_ids[: max_rows + 1])


VERSIONS = {"sigma": "v1", "lolbas": "v1"}
QUERY = np.asarray([1, 0, 0, 0], dtype=np.float32)


def _loaded(store: Store, max_bytes: int = 1 << 20, sources: tuple[str, ...] = ("sigma", "lolbas")) -> SourceVectors:
    vectors = SourceVectors(store.load, max_bytes=max_bytes)
    for source in sources:
        vectors.load("m", source, DIM)
    return vectors


def test_nearest_chunks_in_the_order_the_sql_gives_ties_by_chunk_id() -> None:
    found = _loaded(Store()).nearest("m", ["sigma", "lolbas"], VERSIONS, QUERY * 3, 3)
    assert found is not None
    assert found.chunk_ids == ["l:a#0", "s:a#0", "s:b#0"]  # l:a and s:a tie at 1.0
    assert found.doc_ids == ["l:a", "s:a", "s:b"]
    assert found.sims[:2] == pytest.approx([1.0, 1.0])
    assert found.sims[2] == pytest.approx(0.9 / np.hypot(0.9, 0.1))


def test_k_larger_than_the_source_gives_every_chunk() -> None:
    found = _loaded(Store()).nearest("m", ["lolbas"], VERSIONS, QUERY, 10)
    assert found is not None and found.chunk_ids == ["l:a#0", "l:b#0"]


def test_a_source_not_held_yet_is_loaded_in_the_background_and_postgres_serves_meanwhile() -> None:
    store = Store()
    store.gate.clear()
    vectors = SourceVectors(store.load, max_bytes=1 << 20)
    assert vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 2) is None
    assert vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 2) is None  # one load, not two
    store.gate.set()
    vectors.close()  # waits for the load
    assert store.reads == ["sigma"]
    assert vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 2) is not None


def test_a_newer_version_is_not_served_from_the_old_vectors() -> None:
    store = Store()
    vectors = _loaded(store)
    store.sources["sigma"] = _held("v2", {"s:z#0": [1, 0, 0, 0]})
    assert vectors.nearest("m", ["sigma"], {"sigma": "v2"}, QUERY, 1) is None
    vectors.close()
    found = vectors.nearest("m", ["sigma"], {"sigma": "v2"}, QUERY, 1)
    assert found is not None and found.chunk_ids == ["s:z#0"]
    assert vectors.nearest("m", ["sigma"], {"sigma": "v1"}, QUERY, 1) is None  # the other way round too


def test_a_source_without_counts_is_never_read() -> None:
    store = Store()
    vectors = SourceVectors(store.load, max_bytes=1 << 20)
    assert vectors.nearest("m", ["new"], VERSIONS, QUERY, 1) is None
    vectors.close()
    assert store.reads == []


def test_a_source_beyond_the_budget_is_read_once_per_version_and_never_held() -> None:
    store = Store()
    vectors = SourceVectors(store.load, max_bytes=2 * DIM * 4)  # two rows
    assert not vectors.load("m", "sigma", DIM)  # three rows
    assert vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 1) is None
    vectors.close()
    assert store.reads == ["sigma"] and vectors.info()["bytes"] == 0
    assert vectors.load("m", "lolbas", DIM)  # two rows fit


def test_the_least_recently_used_source_goes_first_over_the_budget() -> None:
    store = Store()
    vectors = SourceVectors(store.load, max_bytes=3 * DIM * 4)  # sigma's three rows, or lolbas' two
    assert vectors.load("m", "lolbas", DIM)
    assert vectors.load("m", "sigma", DIM)
    assert vectors.info()["bytes"] == 3 * DIM * 4
    assert vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 1) is not None
    vectors.close()
    assert vectors.nearest("m", ["lolbas"], VERSIONS, QUERY, 1) is None  # evicted


def test_off_when_the_budget_is_zero() -> None:
    store = Store()
    vectors = SourceVectors(store.load, max_bytes=0)
    assert not vectors.enabled
    assert vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 1) is None
    assert store.reads == []


def test_pgvector_binary_rows_become_unit_float32_rows() -> None:
    raw = [struct.pack(">hh4f", DIM, 0, 3, 4, 0, 0), struct.pack(">hh4f", DIM, 0, 0, 0, 0, 0)]
    rows = unit_rows(raw, DIM)
    assert rows.dtype == np.float32
    assert rows[0].tolist() == pytest.approx([0.6, 0.8, 0, 0])
    assert rows[1].tolist() == [0, 0, 0, 0]  # a zero vector stays zero (no division by zero)


def test_a_failed_load_is_not_tried_again_by_every_search(monkeypatch: pytest.MonkeyPatch) -> None:
    tries: list[str] = []

    def timing_out(model_id: str, source: str, max_rows: int, dimensions: int) -> Held | None:
        tries.append(source)
        raise TimeoutError("canceling statement due to statement timeout")

    vectors = SourceVectors(timing_out, max_bytes=1 << 20)
    for _ in range(3):
        assert vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 1) is None
        vectors.close()
    assert tries == ["sigma"]
    monkeypatch.setattr(source_vectors, "RETRY_AFTER_SECONDS", 0.0)  # once the wait is over, it is read again
    assert vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 1) is None
    vectors.close()
    assert tries == ["sigma", "sigma"]


def test_info_tells_what_is_held_and_what_fails() -> None:
    vectors = _loaded(Store(), max_bytes=1 << 20)
    assert vectors.info() == {"bytes": 5 * DIM * 4, "sources": 2, "max_bytes": 1 << 20, "failed_loads": 0}


def _partial(store: Store, source: str) -> None:
    """The source as the sentence model's vectors are while the pipeline embeds it: some chunks lack theirs."""
    store.sources[source] = dataclasses.replace(store.sources[source], complete=False)


def _with_labels(store: Store) -> Store:
    labels = (("T1003.001",), (), ("T1059", "T1059.001"))
    store.sources["sigma"] = dataclasses.replace(store.sources["sigma"], labels=labels)
    return store


def test_a_source_still_being_embedded_is_not_nearest_for_a_model_that_must_be_whole() -> None:
    store = Store()
    _partial(store, "sigma")
    vectors = _loaded(store)
    assert vectors.nearest("m", ["sigma", "lolbas"], VERSIONS, QUERY, 2, complete=True) is None
    assert vectors.nearest("m", ["lolbas"], VERSIONS, QUERY, 2, complete=True) is not None  # lolbas is whole
    found = vectors.nearest("m", ["sigma"], VERSIONS, QUERY, 2)  # the general model serves what it has
    assert found is not None and found.chunk_ids == ["s:a#0", "s:b#0"]


def test_held_gives_the_sources_whole_and_at_their_version_with_labels() -> None:
    store = _with_labels(Store())
    vectors = _loaded(store)
    found = vectors.held("m", ["sigma", "lolbas"], VERSIONS, DIM)
    assert found is not None and [h.chunk_ids for h in found] == [["s:a#0", "s:b#0", "s:c#0"], ["l:a#0", "l:b#0"]]
    assert found[0].labels == (("T1003.001",), (), ("T1059", "T1059.001"))
    assert vectors.held("m", ["sigma"], {"sigma": "v0"}, DIM) is None  # another version than the one held
    assert vectors.held("m", ["sigma"], VERSIONS, DIM) is not None  # the held one is kept meanwhile
    assert vectors.held("m", [], VERSIONS, DIM) is None
    vectors.close()


def test_held_is_none_while_a_source_is_incomplete() -> None:
    store = Store()
    _partial(store, "lolbas")
    vectors = _loaded(store)
    assert vectors.held("m", ["sigma", "lolbas"], VERSIONS, DIM) is None
    assert vectors.held("m", ["lolbas"], VERSIONS, DIM) is None
    assert vectors.held("m", ["sigma"], VERSIONS, DIM) is not None


def test_held_loads_a_missing_source_in_the_background() -> None:
    store = Store()
    store.gate.clear()
    vectors = SourceVectors(store.load, max_bytes=1 << 20)
    assert vectors.held("trained", ["lolbas"], VERSIONS, DIM) is None
    assert vectors.held("trained", ["lolbas"], VERSIONS, DIM) is None  # one load, not two
    store.gate.set()
    vectors.close()  # waits for the load
    assert store.reads == ["lolbas"]
    found = vectors.held("trained", ["lolbas"], VERSIONS, DIM)
    assert found is not None and found[0].chunk_ids == ["l:a#0", "l:b#0"]
    assert vectors.nearest("m", ["lolbas"], VERSIONS, QUERY, 1) is None  # held per model: another one is not
    vectors.close()


def test_held_reads_nothing_without_counts_or_budget() -> None:
    store = Store()
    vectors = SourceVectors(store.load, max_bytes=1 << 20)
    assert vectors.held("m", ["new"], VERSIONS, DIM) is None  # no counts yet: never read
    assert SourceVectors(store.load, max_bytes=0).held("m", ["sigma"], VERSIONS, DIM) is None  # off
    vectors.close()
    assert store.reads == []
