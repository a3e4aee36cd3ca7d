"""The legs' nearest chunks from vectors held in memory (serving/search/leg_shapes.py, held_nearest): a leg reading
only the ATT&CK sources takes the sentence model's vectors once they are whole, every other leg the general
model's; the vector leg tells which model it read."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from serving.search.leg_shapes import LegShaper
from serving.search.source_vectors import Held, SourceVectors

DIM = 4
VERSIONS = {"mitre_attack": "v1", "mitre_attack_procedures": "v1", "sigma": "v1"}
GENERAL, TRAINED = "general", "trained"
QUERY = np.asarray([1, 0, 0, 0], dtype=np.float32)  # the same query vector from either model
GIVEN = {"exact_vectors": False, "source_index": False, "given_vectors": True}


def _held(first: str, second: str, *, complete: bool = True) -> Held:
    """Two documents of one chunk each: `first` on the query's vector, `second` orthogonal to it."""
    rows = {first: [1, 0, 0, 0], second: [0, 1, 0, 0]}
    ids = sorted(rows)
    return Held("v1", [f"{i}#0" for i in ids], ids, np.asarray([rows[i] for i in ids], np.float32), complete=complete)


class Loader:
    """Each model's vectors of each source: the two models order the ATT&CK documents the other way round."""

    def __init__(self, *, trained_complete: bool = True) -> None:
        self.held = {
            (GENERAL, "mitre_attack"): _held("mitre_attack:T1003", "mitre_attack:T1059"),
            (TRAINED, "mitre_attack"): _held("mitre_attack:T1059", "mitre_attack:T1003", complete=trained_complete),
            (GENERAL, "mitre_attack_procedures"): _held("p:a", "p:b"),
            (TRAINED, "mitre_attack_procedures"): _held("p:b", "p:a"),
            (GENERAL, "sigma"): _held("sigma:x", "sigma:y"),
        }

    def __call__(self, model_id: str, source: str, max_rows: int, dimensions: int) -> Held | None:
        return self.held.get((model_id, source))


class Stats:
    def chunks_in(self, sources: Any) -> float:  # noqa: ANN401
        return 2.0 * len(sources or ())


class Catalog:
    """The catalog's reads held_nearest makes: public sources, their versions and their sizes."""

    def public_sources(self, conn: Any) -> frozenset[str]:  # noqa: ANN401
        return frozenset(VERSIONS)

    def source_versions(self, conn: Any, *, fresh: bool = False) -> dict[str, str]:  # noqa: ANN401
        return dict(VERSIONS)

    def lexeme_stats(self, conn: Any = None) -> Stats:  # noqa: ANN401
        return Stats()


def _vectors(loader: Loader, *models: str) -> SourceVectors:
    vectors = SourceVectors(loader, max_bytes=1 << 20)
    for model, source in loader.held:
        if model in models:
            assert vectors.load(model, source, DIM)
    return vectors


def _params(sources: list[str]) -> dict[str, Any]:
    return {
        "qvec": QUERY,
        "doc_ids": None,
        "doc_filters": [],
        "sources": sources,
        "vec_k": 1,
        "pr_sources": ["mitre_attack_procedures"],
        "pr_chunks": 1,
        "nb_sources": None,
        "nb_chunks": 1,
    }


def _nearest(
    vectors: SourceVectors, sources: list[str], sentence: tuple[str, np.ndarray] | None
) -> tuple[dict[str, Any], dict[str, bool], str | None]:
    shaper = LegShaper(Catalog(), vectors)  # type: ignore[arg-type]
    params = _params(sources)
    walk, vec_model = shaper.held_nearest(None, params, {}, GENERAL, ["procedures"], sentence=sentence)  # type: ignore[arg-type]
    return params, walk, vec_model


def test_the_attack_legs_read_the_sentence_models_vectors() -> None:
    params, walk, vec_model = _nearest(_vectors(Loader(), GENERAL, TRAINED), ["mitre_attack"], (TRAINED, QUERY))
    assert vec_model == TRAINED and walk == GIVEN
    assert params["vec_ids"] == ["mitre_attack:T1059#0"] and params["vec_sims"] == [pytest.approx(1.0)]
    assert params["pr_near_docs"] == ["p:b"] and params["pr_own"]


def test_without_a_sentence_model_the_general_models_vectors_serve() -> None:
    params, walk, vec_model = _nearest(_vectors(Loader(), GENERAL, TRAINED), ["mitre_attack"], None)
    assert vec_model is None and walk == GIVEN
    assert params["vec_ids"] == ["mitre_attack:T1003#0"] and params["pr_near_docs"] == ["p:a"]


def test_a_sentence_model_still_embedding_a_source_does_not_serve_it() -> None:
    vectors = _vectors(Loader(trained_complete=False), GENERAL, TRAINED)
    params, walk, vec_model = _nearest(vectors, ["mitre_attack"], (TRAINED, QUERY))
    assert vec_model is None and params["vec_ids"] == ["mitre_attack:T1003#0"]  # the general model's
    assert params["pr_near_docs"] == ["p:b"]  # the procedure examples are whole: the sentence model's


def test_a_leg_over_other_sources_too_reads_the_general_model() -> None:
    vectors = _vectors(Loader(), GENERAL, TRAINED)
    params, _, vec_model = _nearest(vectors, ["mitre_attack", "sigma"], (TRAINED, QUERY))
    assert vec_model is None and params["vec_ids"] == ["mitre_attack:T1003#0"]
    assert params["pr_near_docs"] == ["p:b"]  # the voter's own sources are ATT&CK's alone


def test_the_general_model_serves_until_the_sentence_models_vectors_are_loaded() -> None:
    vectors = _vectors(Loader(), GENERAL)
    params, _, vec_model = _nearest(vectors, ["mitre_attack"], (TRAINED, QUERY))
    assert vec_model is None and params["vec_ids"] == ["mitre_attack:T1003#0"] and params["pr_near_docs"] == ["p:a"]
    for _ in range(3000):  # the loads that search started, in the background (bounded)
        if vectors.held(TRAINED, ["mitre_attack", "mitre_attack_procedures"], VERSIONS, DIM) is not None:
            break
        time.sleep(0.01)
    params, _, vec_model = _nearest(vectors, ["mitre_attack"], (TRAINED, QUERY))
    assert vec_model == TRAINED and params["vec_ids"] == ["mitre_attack:T1059#0"] and params["pr_near_docs"] == ["p:b"]
    vectors.close()
