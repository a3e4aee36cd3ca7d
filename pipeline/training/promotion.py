"""Trained models in the store (table trained_models): recording one with its lineage and figures, and promoting
one to serve the sentence path (or rolling back to the one before, or to the general model), each in one
transaction."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from pipeline.embedding import embed_pending
from pipeline.training.examples import PROCEDURE_SOURCES, TECHNIQUE_SOURCES
from secrag.db.queries import Queries, one_row
from secrag.errors import PromotionRefused
from secrag.models.embedder import TextModel

log = logging.getLogger(__name__)

Status = Literal["candidate", "promoted", "retired", "rejected"]
# The chunks a trained model's vectors serve: the sentence path's ATT&CK procedures and techniques.
SOURCES = (*PROCEDURE_SOURCES, *TECHNIQUE_SOURCES)


@dataclass(frozen=True, kw_only=True)
class TrainedModel:
    """A row of trained_models: a trained model, what it was made from, its figures and its status."""

    model_id: str  # the fp32 trained model
    served_model: str  # the model whose vectors serve (normally `<model_id>-int8`)
    base_model: str
    replaces: str | None = None  # the served model it was compared with; None: the general model
    attack_version: str | None = None
    data_digest: str
    recipe: Mapping[str, Any]
    validation: Mapping[str, Any]  # pipeline.training.validation.validate's figures
    baseline: Mapping[str, Any]  # the same figures of the model it was compared with
    passed: bool  # its quality gate
    status: Status = "candidate"
    trained_at: datetime | None = None  # None when recording: now
    promoted_at: datetime | None = None
    train_seconds: float | None = None


@dataclass(frozen=True)
class Promotion:
    """What serves the sentence path after a promotion or a rollback."""

    promoted: str | None  # the trained model promoted now; None: the general model serves
    served_model: str | None  # whose vectors serve (None: the general model's)
    previous: str | None  # the trained model promoted before; None: the general model
    changed: bool


def record_trained(conn: psycopg.Connection, sql_dir: Path, row: TrainedModel) -> Status:
    """Record a trained model as a candidate, or as rejected when it did not pass its gate; recorded again, its
    figures are replaced and a promoted or retired model keeps its status. The status it has now."""
    params = asdict(row)
    params.update(
        recipe=Jsonb(dict(row.recipe)),
        validation=Jsonb(dict(row.validation)),
        baseline=Jsonb(dict(row.baseline)),
        status="candidate" if row.passed else "rejected",
    )
    status: Status = one_row(conn.execute(Queries(sql_dir, "training").record_trained, params))[0]
    log.info("recorded trained model %s: %s", row.model_id, status, extra={"model": row.model_id})
    return status


def coverage(conn: psycopg.Connection, sql_dir: Path, model_id: str, sources: Sequence[str] = SOURCES) -> int:
    """How many chunks of `sources` have no vector of `model_id` (0: its vectors cover them all)."""
    return _lacking(conn, Queries(sql_dir, "training"), model_id, sources)[1]


def promote(
    conn: psycopg.Connection,
    sql_dir: Path,
    model_id: str,
    sources: Sequence[str] = SOURCES,
    *,
    force: bool = False,
) -> Promotion:
    """Make the trained model `model_id` the one serving the sentence path, the one promoted before it retired.
    Refused (PromotionRefused) when it is not recorded, when its served model's vectors do not cover every chunk
    of `sources`, or when it did not pass its quality gate, unless `force` (which never overrides coverage)."""
    q = Queries(sql_dir, "training")
    with conn.transaction():
        conn.execute(q.lock_trained_models)
        row = _one(conn, q.trained_model, model_id)
        if row is None:
            known = ", ".join(sorted(m.model_id for m in _all(conn, q))) or "none yet"
            raise PromotionRefused(
                f"trained model {model_id!r} is not recorded in the store (recorded: {known})",
                hint="`secrag models trained` lists them",
            )
        if row.status == "promoted":
            return Promotion(row.model_id, row.served_model, row.model_id, changed=False)
        chunks, missing = _lacking(conn, q, row.served_model, sources)
        if missing:
            raise PromotionRefused(
                f"{missing} of the {chunks} chunks of {', '.join(sources)} have no vector of {row.served_model}: "
                f"promoted, {model_id} would serve without them",
                hint=f"embed those sources with {row.served_model} first: `secrag models promote {model_id} --embed`",
            )
        if not row.passed and not force:
            raise PromotionRefused(
                f"trained model {model_id} did not pass its quality gate ({gate_figures(row)})",
                hint="--force promotes it anyway",
            )
        retired = conn.execute(q.retire_promoted).fetchone()
        conn.execute(q.promote_trained, {"model_id": model_id})
    previous = retired[0] if retired else None
    log.info(
        "promoted trained model %s (was %s)",
        model_id,
        previous or "the general model",
        extra={"model": model_id, "served_model": row.served_model, "previous": previous, "forced": not row.passed},
    )
    return Promotion(model_id, row.served_model, previous, changed=True)


def rollback(conn: psycopg.Connection, sql_dir: Path, sources: Sequence[str] = SOURCES) -> Promotion:
    """Retire the promoted trained model and promote again the one promoted before it (the latest retired one
    promoted earlier), or none: the general model serves the sentence path. A rolled-back model forgets its
    promotion, so a second rollback goes one further back, never forth. PromotionRefused when none is promoted,
    or when the one it would promote again lacks a vector of a chunk of `sources` (as promote checks)."""
    q = Queries(sql_dir, "training")
    with conn.transaction():
        conn.execute(q.lock_trained_models)
        rolled = conn.execute(q.roll_back_promoted).fetchone()
        if rolled is None:
            raise PromotionRefused("no trained model is promoted: the general model serves the sentence path")
        previous, promoted_at = rolled
        back = conn.execute(q.promoted_before, {"before": promoted_at}).fetchone()
        restored = _one(conn, q.trained_model, back[0]) if back is not None else None
        if restored is not None:
            chunks, missing = _lacking(conn, q, restored.served_model, sources)
            if missing:  # raised inside the transaction: the promoted model stays promoted
                raise PromotionRefused(
                    f"{missing} of the {chunks} chunks of {', '.join(sources)} have no vector of "
                    f"{restored.served_model}: promoted again, {restored.model_id} would serve without them",
                    hint=f"embed those sources with {restored.served_model} first: `secrag models rollback --embed`",
                )
            conn.execute(q.promote_trained, {"model_id": restored.model_id})
    log.info(
        "rolled back trained model %s to %s",
        previous,
        restored.model_id if restored else "the general model",
        extra={"model": previous, "restored": restored.model_id if restored else None},
    )
    if restored is None:
        return Promotion(None, None, previous, changed=True)
    return Promotion(restored.model_id, restored.served_model, previous, changed=True)


def rollback_target(conn: psycopg.Connection, sql_dir: Path) -> TrainedModel | None:
    """The trained model a rollback would promote again (None: the general model, or nothing is promoted)."""
    current = promoted(conn, sql_dir)
    if current is None or current.promoted_at is None:
        return None
    q = Queries(sql_dir, "training")
    back = conn.execute(q.promoted_before, {"before": current.promoted_at}).fetchone()
    return _one(conn, q.trained_model, back[0]) if back else None


def embed_missing(
    conn: psycopg.Connection, sql_dir: Path, embedder: TextModel, sources: Sequence[str] = SOURCES
) -> int:
    """Embed the chunks of `sources` lacking a vector of `embedder`'s model (what promote and rollback check
    first); the chunks embedded."""
    return sum(embed_pending(conn, embedder, sql_dir, source=source).embedded for source in sources)


def promoted(conn: psycopg.Connection, sql_dir: Path) -> TrainedModel | None:
    """The trained model serving the sentence path; None: the general model serves it."""
    q = Queries(sql_dir, "training")
    with conn.cursor(row_factory=class_row(TrainedModel)) as cur:
        return cur.execute(q.promoted_trained_model).fetchone()


def trained(conn: psycopg.Connection, sql_dir: Path) -> list[TrainedModel]:
    """Every recorded trained model, newest first."""
    return _all(conn, Queries(sql_dir, "training"))


def kept_models(conn: psycopg.Connection, sql_dir: Path) -> set[str]:
    """The trained models whose vectors `secrag models prune` keeps: the promoted one and the one a rollback
    would promote again (the latest retired one that was promoted)."""
    rows = trained(conn, sql_dir)
    kept = {r.served_model for r in rows if r.status == "promoted"}
    retired = [r for r in rows if r.status == "retired" and r.promoted_at is not None]
    if retired:
        kept.add(max(retired, key=lambda r: r.promoted_at or datetime.min).served_model)
    return kept


def gate_figures(row: TrainedModel) -> str:
    """The gate's figures of a trained model against its baseline: the vote's nDCG@10 and P@1."""
    parts = []
    for key, name in (("vote_ndcg10", "vote nDCG@10"), ("vote_p1", "P@1")):
        mine, theirs = row.validation.get(key), row.baseline.get(key)
        if mine is not None:
            parts.append(f"{name} {mine:.3f}" + (f" vs {theirs:.3f}" if theirs is not None else ""))
    return ", ".join(parts) or "no figures"


def _lacking(conn: psycopg.Connection, q: Queries, model: str, sources: Sequence[str]) -> tuple[int, int]:
    chunks, missing = one_row(conn.execute(q.chunks_lacking_model, {"model": model, "sources": list(sources)}))
    return int(chunks), int(missing)


def _one(conn: psycopg.Connection, query: str, model_id: str) -> TrainedModel | None:
    with conn.cursor(row_factory=class_row(TrainedModel)) as cur:
        return cur.execute(query, {"model_id": model_id}).fetchone()


def _all(conn: psycopg.Connection, q: Queries) -> list[TrainedModel]:
    with conn.cursor(row_factory=class_row(TrainedModel)) as cur:
        return cur.execute(q.trained_models).fetchall()
