"""Embedding models in a real store: one HNSW index each, and pruning the ones no longer configured."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from pipeline.model_store import ensure_model_index, prunable, prune_model, stored_models
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir

SQL_DIR = sql_dir()
FP32, INT8 = "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8"


def add_vectors(db: psycopg.Connection, model: str, n: int) -> None:
    """n unit vectors of `model` (the store's side of embedding: no encoder is needed to test it)."""
    q = Queries(SQL_DIR, "store")
    db.execute(q.ensure_model, {"model": model, "dimensions": 384})
    rng = np.random.default_rng(0)
    for i in range(n):
        v = rng.normal(size=384).astype(np.float32)
        db.execute(
            "INSERT INTO embeddings (content_hash, model_id, vector) VALUES (%s, %s, %s)",
            (f"h{i}", model, v / np.linalg.norm(v)),
        )


def _hnsw_indexes(db: psycopg.Connection) -> list[str]:
    return [
        r[0] for r in db.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'embeddings'") if "hnsw" in r[0]
    ]


def test_a_new_model_gets_its_own_index_once(db: psycopg.Connection) -> None:
    q = Queries(SQL_DIR, "store")
    assert not ensure_model_index(db, FP32, 384, q)  # the migrations made the first model's
    db.execute(q.ensure_model, {"model": INT8, "dimensions": 384})
    assert ensure_model_index(db, INT8, 384, q)
    assert not ensure_model_index(db, INT8, 384, q)
    assert sum(f"'{INT8}'::text" in d for d in _hnsw_indexes(db)) == 1


def test_only_models_neither_active_nor_configured_are_pruned(db: psycopg.Connection) -> None:
    add_vectors(db, FP32, 3)
    add_vectors(db, INT8, 4)
    ensure_model_index(db, INT8, 384, Queries(SQL_DIR, "store"))
    stored = {m.model_id: m for m in stored_models(db, SQL_DIR)}
    assert stored[FP32].active and stored[INT8].vectors == 4
    assert [m.model_id for m in prunable(list(stored.values()), keep={INT8})] == []
    assert [m.model_id for m in prunable(list(stored.values()), keep=set())] == [INT8]
    with pytest.raises(ValueError, match="active"):
        prune_model(db, SQL_DIR, FP32)
    assert db.execute("SELECT count(*) FROM embeddings WHERE model_id = %s", (FP32,)).fetchone()[0] == 3
    assert prune_model(db, SQL_DIR, INT8) == 4
    assert [m.model_id for m in stored_models(db, SQL_DIR)] == [FP32]
    assert not any(INT8 in d for d in _hnsw_indexes(db))
