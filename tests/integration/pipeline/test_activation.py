"""Switching the embedding model: the old set serves until the new one covers every chunk."""

from __future__ import annotations

import psycopg

from pipeline.activation import activate_model_if_complete
from pipeline.chunking import ChunkConfig
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from secrag.settings import get_settings

SQL = get_settings().sql_dir
NEW = "next-model"


def _publish(db: psycopg.Connection) -> list[str]:
    store = Store(SQL)
    store.register_source(db, SourceRow(name="notes", kind="static"))
    records = [Record(source="notes", upstream_id=f"n{i}", title=f"note {i}", body=f"body {i}") for i in range(3)]
    store.publish(db, source="notes", version="v1", records=records, lookup={}, chunking=ChunkConfig())
    return [h for (h,) in db.execute("SELECT DISTINCT content_hash FROM chunks").fetchall()]


def _active(db: psycopg.Connection) -> list[str]:
    return [m for (m,) in db.execute("SELECT model_id FROM embedding_models WHERE active").fetchall()]


def test_new_model_activates_only_when_every_chunk_has_a_vector(db: psycopg.Connection):
    hashes = _publish(db)
    serving = (
        "INSERT INTO embeddings (content_hash, model_id, vector)"
        " SELECT %s, 'all-MiniLM-L6-v2', array_fill(0.1, ARRAY[384])::real[]::vector"
    )
    db.execute(serving, [hashes[0]])  # the active model serves a set of its own
    db.execute("INSERT INTO embedding_models (model_id, dimensions) VALUES (%s, 3)", [NEW])
    db.execute("INSERT INTO embeddings (content_hash, model_id, vector) VALUES (%s, %s, '[1,0,0]')", [hashes[0], NEW])
    partial = activate_model_if_complete(db, SQL, NEW)
    assert not partial.switched and partial.missing == len(hashes) - 1
    assert _active(db) == ["all-MiniLM-L6-v2"]
    for h in hashes[1:]:
        db.execute("INSERT INTO embeddings (content_hash, model_id, vector) VALUES (%s, %s, '[0,1,0]')", [h, NEW])
    done = activate_model_if_complete(db, SQL, NEW)
    assert done.switched and done.active == NEW
    assert _active(db) == [NEW]
    assert not activate_model_if_complete(db, SQL, NEW).switched


def test_a_model_with_some_vectors_replaces_an_active_one_with_none(db: psycopg.Connection):
    """A fresh store: the migrations seed a model row without vectors; the configured model's first
    vectors serve at once rather than none."""
    hashes = _publish(db)
    db.execute("INSERT INTO embedding_models (model_id, dimensions) VALUES (%s, 3)", [NEW])
    db.execute("INSERT INTO embeddings (content_hash, model_id, vector) VALUES (%s, %s, '[1,0,0]')", [hashes[0], NEW])
    result = activate_model_if_complete(db, SQL, NEW)
    assert result.switched and result.active == NEW and result.missing == len(hashes) - 1
    assert _active(db) == [NEW]


def test_unknown_model_never_activates(db: psycopg.Connection):
    _publish(db)
    result = activate_model_if_complete(db, SQL, "never-embedded")
    assert not result.switched and result.active == "all-MiniLM-L6-v2"
