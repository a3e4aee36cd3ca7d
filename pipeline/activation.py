"""Switch the served embedding model once the new one covers every chunk, in one transaction."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import psycopg

from secrag.db.queries import Queries, one_row

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Activation:
    """The outcome of one activation attempt."""

    model: str
    active: str | None  # the model serving after the attempt
    missing: int  # chunks still lacking a vector of `model`
    switched: bool


def activate_model_if_complete(conn: psycopg.Connection, sql_dir: Path, model: str) -> Activation:
    """Make `model` the active one iff every chunk has a vector for it; else keep the old one, unless the
    old one has no vector at all (a fresh store, whose migrations seed a model row): then partial
    coverage beats none, and the API's vector leg finds chunks while the first build still embeds.

    The model rows are locked, the coverage counted and the flag moved in one transaction, so the
    API sees the old model or the new one, never none (the one-active index forbids two).
    """
    q = Queries(sql_dir, "pipeline")
    with conn.transaction():
        rows = conn.execute(q.lock_models).fetchall()
        active = next((m for m, is_active in rows if is_active), None)
        if active == model:
            return Activation(model, active, 0, switched=False)
        if model not in {m for m, _ in rows}:
            return Activation(model, active, -1, switched=False)
        missing = int(one_row(conn.execute(q.chunks_missing_model, {"model": model}))[0])
        if missing and (active is None or bool(one_row(conn.execute(q.model_has_vectors, {"model": active}))[0])):
            return Activation(model, active, missing, switched=False)
        conn.execute(q.deactivate_models, {"model": model})
        conn.execute(q.activate_model, {"model": model})
    log.info("activated embedding model %s (was %s; %d chunks still to embed)", model, active, missing)
    return Activation(model, model, missing, switched=True)
