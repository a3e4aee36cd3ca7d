"""The in-process HNSW index (serving/search/ann_index.py): the exact nearest on a small store in the SQL's order,
used only at every source's current version, built in the background, never beyond its budget."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from serving.search.ann_index import AnnIndex, bytes_per_chunk
from serving.search.source_vectors import Held

DIM = 8
ROWS = 300


def _held(version: str, prefix: str, matrix: np.ndarray) -> Held:
    ids = [f"{prefix}:{i:04d}#0" for i in range(len(matrix))]
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return Held(version=version, chunk_ids=ids, doc_ids=[i.split("#")[0] for i in ids], matrix=unit.astype(np.float32))


class Store:
    """What the loader reads: per source, its version and rows (a test changes them as a publish would)."""

    def __init__(self) -> None:
        rng = np.random.default_rng(7)
        self.sources = {
            "sigma": _held("v1", "s", rng.normal(size=(ROWS, DIM))),
            "lolbas": _held("v1", "l", rng.normal(size=(ROWS // 3, DIM))),
        }
        self.reads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def load(self, model_id: str, source: str, max_rows: int, dimensions: int) -> Held | None:
        self.gate.wait(5)
        self.reads.append(source)
        return self.sources.get(source)

    def exact(self, qvec: np.ndarray, k: int) -> list[str]:
        sims = [
            (float(h.matrix[i] @ qvec), h.chunk_ids[i]) for h in self.sources.values() for i in range(len(h.matrix))
        ]
        return [c for _, c in sorted(sims, key=lambda p: (-p[0], p[1]))[:k]]


VERSIONS = {"sigma": "v1", "lolbas": "v1"}


def _built(store: Store, max_bytes: int = 1 << 26) -> AnnIndex:  # usearch's arena starts at 16 MB
    index = AnnIndex(store.load, max_bytes=max_bytes)
    assert index.build("m", VERSIONS, DIM)
    return index


def _query(seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return q / np.linalg.norm(q)


@pytest.mark.parametrize("seed", range(5))
def test_the_nearest_of_a_small_store_are_the_exact_ones_best_first(seed: int) -> None:
    store = Store()
    q = _query(seed)
    found = _built(store).nearest("m", VERSIONS, q * 3, 10, DIM)
    assert found is not None
    assert found.chunk_ids == store.exact(q, 10)
    assert found.sims == sorted(found.sims, reverse=True)
    held = {c: (h, i) for h in store.sources.values() for i, c in enumerate(h.chunk_ids)}
    exact = [float(held[c][0].matrix[held[c][1]] @ q) for c in found.chunk_ids]
    assert found.sims == pytest.approx(exact, abs=2e-3)  # float16 vectors
    assert found.doc_ids == [c.split("#")[0] for c in found.chunk_ids]
    assert found.sources == [{"s": "sigma", "l": "lolbas"}[c[0]] for c in found.chunk_ids]


def test_not_built_yet_postgres_serves_while_one_build_runs_in_the_background() -> None:
    store = Store()
    store.gate.clear()
    index = AnnIndex(store.load, max_bytes=1 << 26)
    assert index.nearest("m", VERSIONS, _query(0), 5, DIM) is None
    assert index.nearest("m", VERSIONS, _query(0), 5, DIM) is None  # one build, not two
    store.gate.set()
    index.close()  # waits for the build
    assert sorted(store.reads) == ["lolbas", "sigma"]
    assert index.nearest("m", VERSIONS, _query(0), 5, DIM) is not None


def test_a_source_at_another_version_is_not_served_until_built_again() -> None:
    store = Store()
    index = _built(store)
    published = {**VERSIONS, "lolbas": "v2"}
    store.sources["lolbas"] = _held("v2", "l", store.sources["lolbas"].matrix[:10])
    assert index.nearest("m", published, _query(1), 5, DIM) is None
    index.close()
    found = index.nearest("m", published, _query(1), 5, DIM)
    assert found is not None and found.chunk_ids == store.exact(_query(1), 5)
    assert index.nearest("m", VERSIONS, _query(1), 5, DIM) is None  # the old version is gone
    index.close()


def test_a_new_source_is_not_served_until_built_with_it() -> None:
    index = _built(Store())
    assert index.nearest("m", {**VERSIONS, "acme_notes": "v1"}, _query(2), 5, DIM) is None
    index.close()


def test_an_index_over_its_budget_is_never_held_nor_built_again_at_the_same_versions() -> None:
    store = Store()
    budget = bytes_per_chunk(DIM) * ROWS  # fewer than the two sources' rows
    index = AnnIndex(store.load, max_bytes=budget)
    assert not index.build("m", VERSIONS, DIM)
    assert index.info() == {"bytes": 0, "chunks": 0, "max_bytes": budget}
    reads = len(store.reads)
    assert index.nearest("m", VERSIONS, _query(3), 5, DIM) is None
    index.close()
    assert len(store.reads) == reads


def test_off_reads_nothing() -> None:
    store = Store()
    index = AnnIndex(store.load, max_bytes=0)
    assert not index.enabled
    assert index.nearest("m", VERSIONS, _query(4), 5, DIM) is None
    index.close()
    assert store.reads == []


def test_info_tells_what_is_held() -> None:
    info = _built(Store()).info()
    assert info["chunks"] == ROWS + ROWS // 3
    assert 0 < info["bytes"] <= info["max_bytes"]
