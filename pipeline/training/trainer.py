"""One training of the sentence model, as the pipeline runs it: read the store's labelled data, fine-tune the
general model's weights on it (or find the same model trained before: same inputs, same id), register it and its
int8 export, embed the ATT&CK sources with it, validate it against the model it would replace on the held-back
actors' examples, record it, and promote it when it is better. Everything but the fine-tune reads and writes
through plain functions of this package, so the asset is wiring."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from pipeline.embedding import embed_pending
from pipeline.training import promotion
from pipeline.training.examples import LabelledData, read_labelled
from pipeline.training.fine_tune import Recipe, fine_tune
from pipeline.training.validation import score
from secrag.db.queries import Queries
from secrag.models.embedder import TextModel
from secrag.models.registry import model_info
from secrag.models.trained import MANIFEST, int8_id, read_manifest, trained_folder, trained_id, write_models_file
from secrag.models.weights import weights_dir

log = logging.getLogger(__name__)

# The figure the quality gate compares: nDCG@10 of the vote of the nearest examples plus the technique documents
# (the sentence path's signals), on the held-back actors' examples; a new model must beat the one it would
# replace by at least MIN_GAIN.
GATE_FIGURE = "both_ndcg10"
MIN_GAIN = 0.005


@dataclass(frozen=True)
class TrainingConfig:
    """What a training needs besides the store: the general model, the recipe and the gate."""

    base_model: str  # the general embedding model (an int8 id trains its fp32 weights)
    models_dir: Path
    recipe: Recipe
    holdout: int = 8  # one actor in `holdout` is held back for validation
    min_examples: int = 1000  # fewer training examples: no training (a store without ATT&CK's examples)


@dataclass(frozen=True)
class Outcome:
    """What one training did."""

    model_id: str
    served_model: str
    trained: bool  # False: the same inputs' model was there already
    train_seconds: float
    embedded: int
    validation: dict[str, float]
    baseline: dict[str, float]
    baseline_model: str
    passed: bool
    promoted: bool
    counts: dict[str, int]
    versions: dict[str, str | None]


Encoders = Callable[[str], TextModel]  # model id -> its document/query encoder


def train_sentence_model(
    conn: psycopg.Connection,
    sql_dir: Path,
    config: TrainingConfig,
    encoders: Encoders,
    *,
    progress: Callable[[str], None] = log.info,
) -> Outcome:
    """Train (when needed), embed, validate, record and, when it beats the served one, promote the sentence model."""
    data = read_labelled(conn, sql_dir, holdout=config.holdout)
    if len(data.train) < config.min_examples:
        raise ValueError(
            f"the store holds {len(data.train)} procedure examples to train on, fewer than {config.min_examples}: "
            "publish mitre_attack and mitre_attack_procedures first"
        )
    base = model_info(config.base_model)
    base_id = base.quantized_from or base.model_id
    model_id = trained_id(base_id, config.recipe.as_dict(), data.digest())
    folder = trained_folder(config.models_dir, model_id)
    trained, seconds = False, 0.0
    manifest = read_manifest(folder) if folder.exists() else None
    if manifest is None:
        progress(f"training {model_id} from {base_id} on {len(data.train)} examples ({config.recipe.steps} steps)")
        started = time.monotonic()
        fine_tune(
            weights_dir(model_info(base_id), config.models_dir),
            data.pairs(),
            config.recipe,
            folder,
            progress=lambda step, steps, loss: progress(f"step {step}/{steps}: loss {loss:.3f}"),
        )
        seconds = round(time.monotonic() - started, 1)
        write_models_file(folder, model_id, model_info(base_id))
        _write_manifest(folder, base_id, config.recipe, data, seconds)
        trained = True
    else:
        seconds = float(manifest.get("train_seconds") or 0.0)
        progress(f"{model_id} was trained before from the same inputs: reused")
    served = int8_id(model_id)
    encoder = encoders(served)
    embedded = 0
    for source in promotion.SOURCES:
        embedded += embed_pending(conn, encoder, sql_dir, source=source).embedded
    current = promotion.promoted(conn, sql_dir)
    baseline_model = current.served_model if current is not None else config.base_model
    validation = _validate(conn, sql_dir, data, served, encoder)
    baseline = (
        validation
        if baseline_model == served
        else _validate(conn, sql_dir, data, baseline_model, encoders(baseline_model))
    )
    passed = baseline_model == served or validation[GATE_FIGURE] >= baseline[GATE_FIGURE] + MIN_GAIN
    promotion.record_trained(
        conn,
        sql_dir,
        promotion.TrainedModel(
            model_id=model_id,
            served_model=served,
            base_model=base_id,
            replaces=current.model_id if current is not None else None,
            attack_version=data.versions.get("mitre_attack"),
            data_digest=data.digest(),
            recipe=config.recipe.as_dict(),
            validation=validation,
            baseline=baseline,
            passed=passed,
            train_seconds=seconds,
        ),
    )
    promoted = False
    if passed and (current is None or current.model_id != model_id):
        promoted = promotion.promote(conn, sql_dir, model_id).changed
    return Outcome(
        model_id=model_id,
        served_model=served,
        trained=trained,
        train_seconds=seconds,
        embedded=embedded,
        validation=validation,
        baseline=baseline,
        baseline_model=baseline_model,
        passed=passed,
        promoted=promoted,
        counts=data.counts(),
        versions=data.versions,
    )


def _validate(
    conn: psycopg.Connection, sql_dir: Path, data: LabelledData, model_id: str, encoder: TextModel
) -> dict[str, float]:
    """The model's figures from its stored vectors of the examples and techniques, the validation sentences
    encoded as queries."""
    queries = np.asarray(encoder.encode_queries([e.text for e in data.validation]), dtype=np.float32)
    voters = _stored(conn, sql_dir, model_id, [e.doc_id for e in data.train])
    techniques = _stored(conn, sql_dir, model_id, [t.doc_id for t in data.techniques])
    return score(_unit(queries), voters, techniques, data)


def _stored(conn: psycopg.Connection, sql_dir: Path, model_id: str, doc_ids: Sequence[str]) -> np.ndarray:
    """Unit rows of the model's vectors of these documents' first chunks, in their order."""
    from pgvector.psycopg import register_vector

    register_vector(conn)
    rows = conn.execute(
        Queries(sql_dir, "training").first_chunk_vectors, {"model": model_id, "doc_ids": list(doc_ids)}
    ).fetchall()
    found: dict[str, Any] = {r[0]: r[1].to_numpy() for r in rows}  # pgvector loads a pgvector.Vector
    missing = [d for d in doc_ids if d not in found]
    if missing:
        raise ValueError(f"{len(missing)} documents have no vector of {model_id} (first: {missing[0]})")
    return _unit(np.asarray([np.asarray(found[d], dtype=np.float32) for d in doc_ids]))


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (rows / norms).astype(np.float32)


def _write_manifest(folder: Path, base_id: str, recipe: Recipe, data: LabelledData, seconds: float) -> None:
    manifest = {
        "base_model": base_id,
        "recipe": recipe.as_dict(),
        "data_digest": data.digest(),
        "versions": data.versions,
        "counts": data.counts(),
        "train_seconds": seconds,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
