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


def _statistics(db: psycopg.Connection) -> dict[str, tuple[int, float]]:
    """Each vector table's manual ANALYZE count and the row count the planner knows (-1: never analyzed)."""
    rows = db.execute(
        "SELECT s.relname, s.analyze_count, c.reltuples FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid"
        " WHERE s.relname IN ('embeddings', 'chunk_vectors')"
    ).fetchall()
    return {name: (int(count), float(tuples)) for name, count, tuples in rows}


def test_a_pass_that_writes_vectors_leaves_the_planner_their_statistics(
    db: psycopg.Connection, embedder: Embedder
) -> None:
    """Searches read embeddings and chunk_vectors: without statistics the planner sorts exact distances instead
    of walking the HNSW index until autovacuum gets round to them (far fewer rows than its threshold here)."""
    store = Store(SQL)
    store.register_source(db, SourceRow(name="demo", kind="online"))
    records = [Record("demo", f"r{i}", f"Rule {i}", f"Process injection with tool {i}") for i in range(3)]
    store.publish(db, source="demo", version="v1", records=records, lookup={}, chunking=ChunkConfig())
    before = _statistics(db)
    assert embed_pending(db, embedder, SQL, source="demo").embedded == 3
    after = _statistics(db)
    assert after == {name: (before[name][0] + 1, 3.0) for name in ("embeddings", "chunk_vectors")}
    assert embed_pending(db, embedder, SQL, source="demo").embedded == 0
    assert _statistics(db) == after  # nothing written, nothing to analyze


def test_a_pass_times_its_phases_and_keeps_the_batches_written_before_a_failure(
    db: psycopg.Connection, embedder: Embedder
) -> None:
    """Vectors are written by a thread beside the encoder: an encoder failing on the third batch leaves the two
    batches before it committed (the second was still being written), the connection usable, and a retry
    embeds only the rest."""
    from pipeline.embedding import PHASES

    store = Store(SQL)
    store.register_source(db, SourceRow(name="demo", kind="online"))
    records = [Record("demo", f"r{i}", f"Rule {i}", "Credential dumping " * (i + 1)) for i in range(6)]
    store.publish(db, source="demo", version="v1", records=records, lookup={}, chunking=ChunkConfig())
    calls = []

    class FailsOnTheThirdBatch:
        model_id, dimensions = embedder.model_id, embedder.dimensions

        def encode_documents(self, texts: list[str]):  # noqa: ANN202 - a float32 matrix
            calls.append(len(texts))
            if len(calls) == 3:
                raise RuntimeError("the encoder ran out of memory")
            return embedder.encode_documents(texts)

    with pytest.raises(RuntimeError, match="out of memory"):
        embed_pending(db, FailsOnTheThirdBatch(), SQL, source="demo", batch_size=2)  # type: ignore[arg-type]
    assert db.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 4
    rest = embed_pending(db, embedder, SQL, source="demo", batch_size=2)
    assert (rest.embedded, rest.reused) == (2, 4)
    assert set(rest.phases) == set(PHASES) and all(v >= 0 for v in rest.phases.values())
    assert rest.phases["encode"] > 0 and rest.phases["write"] > 0


def test_a_model_not_in_the_registry_is_refused() -> None:
    from secrag.errors import ConfigError

    with pytest.raises(ConfigError, match="not in the model registry"):
        Embedder("some-random-model")
