"""Embedding pass with the real model on a real store: only missing vectors are computed."""

from __future__ import annotations

import psycopg
import pytest

from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from secrag.files.package_data import sql_dir
from secrag.models.embedder import Embedder

SQL = sql_dir()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    e = Embedder("all-MiniLM-L6-v2", batch_size=32)
    e.load()
    return e


def test_embeds_missing_chunks_once_and_reuses_identical_text(db: psycopg.Connection, embedder: Embedder) -> None:
    store = Store(SQL)
    store.register_source(db, SourceRow(name="demo", kind="online"))
    records = [Record("demo", f"r{i}", f"Rule {i}", f"Credential dumping with tool {i}") for i in range(5)]
    store.publish(db, source="demo", version="v1", records=records, lookup={}, chunking=ChunkConfig())
    first = embed_pending(db, embedder, SQL, source="demo", batch_size=2)
    assert (first.chunks, first.embedded, first.reused) == (5, 5, 0)
    again = embed_pending(db, embedder, SQL, source="demo")
    assert (again.embedded, again.reused) == (0, 5)
    changed = records[:4] + [Record("demo", "r4", "Rule 4", "Now about lateral movement")]
    store.publish(db, source="demo", version="v2", records=changed, lookup={}, chunking=ChunkConfig())
    assert embed_pending(db, embedder, SQL, source="demo").embedded == 1
    dims, norm = db.execute(
        "SELECT vector_dims(vector), round((vector <#> vector)::numeric * -1, 3) FROM embeddings LIMIT 1"
    ).fetchone()
    assert dims == 384 and float(norm) == pytest.approx(1.0, abs=0.01)


def test_a_model_not_in_the_registry_is_refused() -> None:
    from secrag.errors import ConfigError

    with pytest.raises(ConfigError, match="not in the model registry"):
        Embedder("some-random-model")
