"""The behaviour gate's fit (secrag/mapping/behaviour.py): the training examples as positives against the store's
sentences about no procedure, a logistic regression over [vector, surface]; its threshold lets `keep` of the
held-back actors' examples through, and its figures say how many held-out negatives it sets aside."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.training.verifier_data import held_out
from secrag.mapping.behaviour import BehaviourGate, surface_matrix
from secrag.models.embedder import TextModel


@dataclass(frozen=True)
class Texts:
    """Sentences and their unit vectors of the sentence model, in the same order."""

    texts: list[str]
    vectors: np.ndarray


def unit(rows: Any) -> np.ndarray:  # noqa: ANN401 - an encoder's rows
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def fit_gate(
    positives: Texts,
    held_positives: Texts,
    negatives: Sequence[str],
    encoder: TextModel,
    *,
    holdout: int,
    keep: float,
    c: float,
) -> tuple[BehaviourGate, dict[str, float]]:
    """The gate, and its figures on the held-back examples and the held-out negatives."""
    from sklearn.linear_model import LogisticRegression

    if not negatives:
        raise ValueError("the store holds no text about no procedure to train the behaviour gate on")
    train_neg = [t for t in negatives if not held_out(t, holdout)]
    test_neg = [t for t in negatives if held_out(t, holdout)]
    neg = Texts([*train_neg, *test_neg], unit(encoder.encode_queries([*train_neg, *test_neg])))
    x = np.vstack([_x(positives), _x(neg)[: len(train_neg)]])
    y = np.concatenate([np.ones(len(positives.texts)), np.zeros(len(train_neg))])
    model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced").fit(x, y)
    gate = BehaviourGate(model.coef_[0].astype(np.float64), float(model.intercept_[0]), 0.0)
    kept = gate.scores(held_positives.vectors, held_positives.texts)
    threshold = float(np.quantile(kept, 1.0 - keep)) if len(kept) else 0.5
    gate = BehaviourGate(gate.coef, gate.intercept, round(threshold, 6))
    tested = gate.scores(neg.vectors[len(train_neg) :], test_neg)
    return gate, {
        "gate_threshold": round(threshold, 4),
        "gate_kept_examples": round(float(np.mean(kept >= threshold)) if len(kept) else 0.0, 4),
        "gate_set_aside_negatives": round(float(np.mean(tested < threshold)) if len(tested) else 0.0, 4),
        "gate_negatives": float(len(negatives)),
    }


def _x(texts: Texts) -> np.ndarray:
    return np.hstack([texts.vectors.astype(np.float64), surface_matrix(texts.texts)])
