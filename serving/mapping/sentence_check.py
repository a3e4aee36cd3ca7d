"""The check /v1/search's sentence path ranks by (serving/search/verified_ranking.py): a report sentence's candidate
techniques among the sentence model's held ATT&CK vectors, each with the probability the verifier trained beside
that model gives it; the map's evidence and verifier, for one sentence already encoded."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import psycopg

from secrag.mapping.candidates import candidates
from serving.mapping.evidence import named_techniques
from serving.mapping.held_path import ATTACK, PROCEDURES, held_attack
from serving.mapping.verifier_file import verifier_of, verifier_stamp
from serving.search.catalog import Catalog
from serving.search.search_file import SearchConfig
from serving.search.source_vectors import SourceVectors


@dataclass(frozen=True)
class SentenceCheck:
    """Verifies one report sentence's techniques, with the map's candidates (search.yaml `map.selector`'s voters
    and top)."""

    vectors: SourceVectors
    catalog: Catalog
    config: SearchConfig

    @property
    def source(self) -> str:
        return ATTACK

    def version(self, model_id: str) -> str:
        """The verifier file's change time, "" without one: a verifier written beside a model already serving
        changes the answers."""
        return verifier_stamp(model_id)

    def __call__(self, conn: psycopg.Connection, model_id: str, vector: np.ndarray, text: str) -> dict[str, float]:
        """Technique doc_id -> probability; empty while the model has no verifier or its vectors are not held."""
        verifier = verifier_of(model_id)
        if verifier is None:
            return {}
        versions = self.catalog.source_versions(conn)
        procedures = self.vectors.held(model_id, [PROCEDURES], versions, len(vector))
        attack = self.vectors.held(model_id, [ATTACK], versions, len(vector))
        if procedures is None or attack is None:
            return {}
        selector = self.config.map.selector
        if selector is None:
            return {}
        names = frozenset(self.catalog.technique_names().find(text))
        with self.vectors.one_blas_thread():  # one sentence: more threads only contend for the cores
            found = candidates(
                np.asarray(vector, dtype=np.float32).reshape(1, -1),
                held_attack(model_id, procedures, attack),
                voters=selector.voters,
                top=selector.top,
                named=[named_techniques(text)],
                names_found=[names],
            )[0]
        scores = verifier.scores(found)
        return {f"{ATTACK}:{c.technique}": float(p) for c, p in zip(found, scores, strict=True)}
