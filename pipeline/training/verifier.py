"""One training of the map's verifier and behaviour gate for the promoted sentence model: each procedure example's
candidates from that model's vectors (its own actor's examples left out), labelled by its technique, fitted by a
logistic regression over their evidence (secrag/mapping/verifier.py); the gate fitted on the examples against the
store's text about no procedure. Either is fitted on the training examples (validated on the held-back actors'
examples, as the sentence model is) or on the held-back actors' examples, which the sentence model never saw
(cross-fitted by actor: each fold of actors scored by the model fitted on the others; the one kept fitted on all).
The verifier is kept beside the model (verifier.json) only when its first candidate is right more often than the
vote's (the order of the candidates without it) by MIN_GAIN; its figures are in the file."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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
    max_examples: int = 8000  # training examples the gate (or the verifier fitted on them) reads (a hash picks them)
    negatives: int = 8000  # sentences about no procedure for the behaviour gate
    per_source: int = 2000  # documents read per source for them
    holdout: int = 8
    keep: float = 0.95  # the share of held-back actors' examples the behaviour gate lets through
    c: float = 1.0  # the logistic regressions' inverse regularisation
    fit_on: Literal["held_back", "training"] = "training"  # whose examples' candidates the verifier is fitted on
    gate_fit_on: Literal["held_back", "training"] = "training"  # whose examples are the behaviour gate's positives
    folds: int = 5  # held_back: folds of actors, each scored by the model fitted on the others


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
    uses_training = "training" in (config.fit_on, config.gate_fit_on)
    train = _sample(data.train, config.max_examples) if uses_training else []
    validation = list(data.validation)
    progress(f"encoding {len(train) + len(validation)} examples with {served_model}")
    vectors = unit(encoder.encode_queries([e.text for e in [*train, *validation]]))
    train_vectors, validation_vectors = vectors[: len(train)], vectors[len(train) :]
    checked = example_candidates(validation_vectors, validation, procedures, held, voters=config.voters, top=config.top)
    if config.fit_on == "training":
        found = example_candidates(train_vectors, train, procedures, held, voters=config.voters, top=config.top)
        verifier = _fit(served_model, *_rows(found, train), config.c)
        scored = [verifier.scores(cands) for cands in checked]
    else:
        verifier, scored = cross_fit(served_model, checked, validation, config.folds, config.c)
    progress(f"fitted the verifier on the candidates of the {config.fit_on} examples")
    figures = ranking_figures(scored, checked, validation)
    figures["folds"] = float(config.folds) if config.fit_on == "held_back" else 0.0  # 0: fitted on the training split
    negatives = narrative_sentences(conn, sql_dir, per_source=config.per_source, limit=config.negatives)
    held_back = Texts([e.text for e in validation], validation_vectors)
    positives, unseen = (
        (held_back, actor_folds(validation, config.folds))
        if config.gate_fit_on == "held_back"
        else (Texts([e.text for e in train], train_vectors), held_back)
    )
    progress(f"fitting the behaviour gate on {len(positives.texts)} examples against {len(negatives)} other sentences")
    gate, gate_figures = fit_gate(
        positives,
        unseen,
        negatives,
        encoder,
        holdout=config.holdout,
        keep=config.keep,
        c=config.c,
    )
    figures.update(gate_figures)
    passed = figures[GATE_FIGURE] >= figures["vote_p1"] + MIN_GAIN
    figures["seconds"] = round(time.monotonic() - started, 1)
    verifier = dataclasses.replace(verifier, gate=gate, figures=figures)
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


def _fit(model: str, x: np.ndarray, y: np.ndarray, c: float) -> Verifier:
    """A logistic regression over the standardised features `x` of candidates labelled `y` (1: right)."""
    from sklearn.linear_model import LogisticRegression

    if len(set(y.tolist())) < 2:
        raise ValueError("the verifier needs right and wrong candidates to fit on")
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    fitted = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return Verifier(model, FEATURES, mean, scale, fitted.coef_[0], float(fitted.intercept_[0]))


def actor_folds(examples: Sequence[Example], folds: int) -> list[int]:
    """Each example's fold: its actor's place among the actors ordered by a hash of their id, modulo `folds`."""
    actors = sorted({e.actor for e in examples}, key=lambda a: hashlib.sha256(f"fold:{a}".encode()).hexdigest())
    if len(actors) < 2 or folds < 2:
        raise ValueError(f"cross-fitting by actor needs two folds and two actors ({len(actors)} held back)")
    fold = {a: i % folds for i, a in enumerate(actors)}
    return [fold[e.actor] for e in examples]


def cross_fit(
    model: str, found: Sequence[Sequence[Candidate]], examples: Sequence[Example], folds: int, c: float
) -> tuple[Verifier, list[np.ndarray]]:
    """The verifier fitted on every example's candidates, and each example's scores by the verifier fitted on the
    other folds' actors."""
    fold = actor_folds(examples, folds)
    scored: list[np.ndarray] = [np.zeros(len(cands)) for cands in found]
    for k in sorted(set(fold)):
        rest = [i for i, f in enumerate(fold) if f != k]
        verifier = _fit(model, *_rows([found[i] for i in rest], [examples[i] for i in rest]), c)
        for i in (i for i, f in enumerate(fold) if f == k):
            scored[i] = verifier.scores(found[i])
    return _fit(model, *_rows(found, examples), c), scored


def ranking_figures(
    scored: Sequence[np.ndarray], found: Sequence[Sequence[Candidate]], examples: Sequence[Example]
) -> dict[str, float]:
    """P@1 of the verifier's order (`scored`, one score per candidate) and of the vote's (the candidates' own
    order), the share of examples whose technique is among the candidates, and the verifier's log loss, on the
    held-back actors' examples."""
    right = vote = reachable = 0
    losses: list[float] = []
    for p, cands, example in zip(scored, found, examples, strict=True):
        if not cands:
            continue
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
