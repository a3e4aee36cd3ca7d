"""A report sentence's ranking checked by the verifier trained beside the sentence model: the fused score of each
technique document it scored becomes 1 - (1 - score)(1 - w x p), p the verifier's probability and w
`class_weights.sentence.verified` (search.yaml): a noisy-or that keeps scores in (0, 1] and the others' as fused,
before thresholds apply. The check (the sentence's candidates among the held ATT&CK vectors, and the verifier) is
the map's, handed to the searcher by the service (serving/mapping/sentence_check.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
import psycopg

from serving.search import analysis as logic
from serving.search.search_file import SearchConfig


class SentenceCheck(Protocol):
    """(connection, sentence model id, the sentence's vector of it, the sentence) -> doc_id -> probability, for the
    technique documents of one source."""

    @property
    def source(self) -> str: ...

    def version(self, model_id: str) -> str:
        """What the check's answers for `model_id` depend on besides the model (for the result cache's key)."""
        ...

    def __call__(
        self, conn: psycopg.Connection, model_id: str, vector: np.ndarray, text: str
    ) -> Mapping[str, float]: ...


def verified(rows: list[dict[str, Any]], probabilities: Mapping[str, float], weight: float) -> list[dict[str, Any]]:
    """The fused rows with their scores verified (see the module); as they are without probabilities."""
    if weight <= 0 or not probabilities:
        return rows
    return [
        {**row, "score": 1.0 - (1.0 - float(row["score"] or 0.0)) * (1.0 - weight * probabilities[row["doc_id"]])}
        if row["doc_id"] in probabilities
        else row
        for row in rows
    ]


def rerank(
    rows: list[dict[str, Any]],
    check: SentenceCheck | None,
    conn: psycopg.Connection,
    sentence: tuple[str, np.ndarray] | None,
    query: str,
    analysis: logic.QueryAnalysis,
    config: SearchConfig,
) -> list[dict[str, Any]]:
    """A report sentence's fused rows verified (`verified`) while its sentence model serves and has a verifier;
    else as they are (and unchecked when none is a document of the check's source)."""
    weight = config.weights(analysis.query_type).verified
    if check is None or sentence is None or not analysis.report_sentence or not weight:
        return rows
    if not any(row["source"] == check.source for row in rows):
        return rows
    return verified(rows, check(conn, sentence[0], sentence[1], query), weight)
