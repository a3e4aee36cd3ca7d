"""One training of the map's verifier and behaviour gate for the promoted sentence model: each training example's
candidates from that model's vectors (its own actor's examples left out), labelled by its technique, fitted by a
logistic regression over their evidence (secrag/mapping/verifier.py); the gate fitted on the examples against the
store's text about no procedure. Validated on the held-back actors' examples as the sentence model is: the
verifier is kept beside the model (verifier.json) only when its first candidate is right more often than the
vote's (the order of the candidates without it) by MIN_GAIN; its figures are in the file."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from pipeline.training import promotion
from pipeline.training.behaviour_gate import Texts, fit_gate, unit
from pipeline.training.examples import Example, read_labelled
from pipeline.training.verifier_data import example_candidates, narrative_sentences, read_held
from secrag.mapping.candidates import Candidate, HeldAttack
from secrag.mapping.verifier import FEATURES, Verifier, feature_matrix, write_verifier
from secrag.models.embedder import TextModel
from secrag.models.trained import trained_folder

log = logging.getLogger(__name__)

GATE_FIGURE = "verifier_p1"  # on the held-back actors' examples, against "vote_p1"
MIN_GAIN = 0.005


@dataclass(frozen=True)
class VerifierConfig:
    """How the verifier and the behaviour gate are trained."""

    voters: int = 20  # as search.yaml's map.selector
    top: int = 5
    max_examples: int = 8000  # training examples whose candidates are fitted (a hash picks them)
    negatives: int = 8000  # sentences about no procedure for the behaviour gate
    per_source: int = 2000  # documents read per source for them
    holdout: int = 8
    keep: float = 0.95  # the share of held-back actors' examples the behaviour gate lets through
    c: float = 1.0  # the logistic regressions' inverse regularisation


@dataclass(frozen=True)
class VerifierOutcome:
    """What one training of the verifier did."""

    model: str
    passed: bool
    written: Path | None
    figures: dict[str, float]
    seconds: float


def train_verifier(
    conn: psycopg.Connection,
    sql_dir: Path,
    folder: Path,
    served_model: str,
    encoder: TextModel,
    config: VerifierConfig = VerifierConfig(),
    *,
    progress: Callable[[str], None] = log.info,
) -> VerifierOutcome:
    """Train, validate and (when it passes) write the verifier of `served_model` into its trained folder."""
    started = time.monotonic()
    data = read_labelled(conn, sql_dir, holdout=config.holdout)
    procedures, attack = read_held(conn, sql_dir, served_model)
    if not len(procedures.chunk_ids) or not len(attack.chunk_ids):
        raise ValueError(f"{served_model} has no vectors of ATT&CK's techniques and procedure examples")
    held = HeldAttack.of([procedures], [attack])
    train = _sample(data.train, config.max_examples)
    validation = list(data.validation)
    progress(f"encoding {len(train) + len(validation)} examples with {served_model}")
    vectors = unit(encoder.encode_queries([e.text for e in [*train, *validation]]))
    train_vectors, validation_vectors = vectors[: len(train)], vectors[len(train) :]
    found = example_candidates(train_vectors, train, procedures, held, voters=config.voters, top=config.top)
    checked = example_candidates(validation_vectors, validation, procedures, held, voters=config.voters, top=config.top)
    x, y = _rows(found, train)
    progress(f"fitting the verifier on {len(y)} candidates of {len(train)} examples ({int(y.sum())} right)")
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    model = _fit((x - mean) / scale, y, config.c)
    verifier = Verifier(served_model, FEATURES, mean, scale, model.coef_[0], float(model.intercept_[0]))
    figures = _figures(verifier, checked, validation)
    negatives = narrative_sentences(conn, sql_dir, per_source=config.per_source, limit=config.negatives)
    progress(f"fitting the behaviour gate on {len(train)} examples against {len(negatives)} other sentences")
    gate, gate_figures = fit_gate(
        Texts([e.text for e in train], train_vectors),
        Texts([e.text for e in validation], validation_vectors),
        negatives,
        encoder,
        holdout=config.holdout,
        keep=config.keep,
        c=config.c,
    )
    figures.update(gate_figures)
    passed = figures[GATE_FIGURE] >= figures["vote_p1"] + MIN_GAIN
    figures["seconds"] = round(time.monotonic() - started, 1)
    verifier = Verifier(
        served_model, FEATURES, mean, scale, verifier.coef, verifier.intercept, gate=gate, figures=figures
    )
    written = write_verifier(folder, verifier) if passed else None
    progress(
        f"verifier of {served_model}: P@1 {figures[GATE_FIGURE]} against the vote's {figures['vote_p1']}; "
        + ("kept" if passed else "not kept")
    )
    return VerifierOutcome(served_model, passed, written, figures, figures["seconds"])


def _sample(examples: Sequence[Example], most: int) -> list[Example]:
    """At most `most` examples, picked by a hash of their id (the same store picks the same ones)."""
    ranked = sorted(examples, key=lambda e: hashlib.sha256(e.doc_id.encode()).hexdigest())
    return sorted(ranked[:most], key=lambda e: e.doc_id)


def _rows(found: Sequence[Sequence[Candidate]], examples: Sequence[Example]) -> tuple[np.ndarray, np.ndarray]:
    flat = [c for cands in found for c in cands]
    labels = [c.technique == e.technique for cands, e in zip(found, examples, strict=True) for c in cands]
    return feature_matrix(flat), np.asarray(labels, dtype=int)


def _fit(x: np.ndarray, y: np.ndarray, c: float) -> Any:  # noqa: ANN401 - a fitted LogisticRegression
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=2000).fit(x, y)


def _figures(verifier: Verifier, found: Sequence[Sequence[Candidate]], examples: Sequence[Example]) -> dict[str, float]:
    """P@1 of the verifier's order and of the vote's (the candidates' own order), the share of examples whose
    technique is among the candidates, and the verifier's log loss, on the held-back actors' examples."""
    right = vote = reachable = 0
    losses: list[float] = []
    for cands, example in zip(found, examples, strict=True):
        if not cands:
            continue
        p = verifier.scores(cands)
        right += cands[int(np.argmax(p))].technique == example.technique
        vote += cands[0].technique == example.technique
        reachable += any(c.technique == example.technique for c in cands)
        for c, q in zip(cands, p, strict=True):
            q = min(max(float(q), 1e-6), 1 - 1e-6)
            losses.append(-np.log(q) if c.technique == example.technique else -np.log(1 - q))
    n = max(1, len(examples))
    return {
        "verifier_p1": round(right / n, 4),
        "vote_p1": round(vote / n, 4),
        "reachable": round(reachable / n, 4),
        "verifier_log_loss": round(float(np.mean(losses)) if losses else 0.0, 4),
        "validation_examples": float(len(examples)),
    }


def train_promoted_verifier(
    conn: psycopg.Connection,
    sql_dir: Path,
    models_dir: Path,
    encoders: Callable[[str], TextModel],
    config: VerifierConfig = VerifierConfig(),
    *,
    progress: Callable[[str], None] = log.info,
) -> VerifierOutcome | None:
    """The verifier of the promoted sentence model, trained into its folder; None when the general model serves."""
    row = promotion.promoted(conn, sql_dir)
    if row is None:
        progress("no trained sentence model is promoted: no verifier to train")
        return None
    folder = trained_folder(models_dir, row.model_id)
    return train_verifier(
        conn, sql_dir, folder, row.served_model, encoders(row.served_model), config, progress=progress
    )
