"""An ATT&CK source's embeddings asset also embeds its new chunks with the promoted sentence model
(sentence_model_vectors), so the sentence path stays whole between a publish and the next training."""

from __future__ import annotations

from pathlib import Path

import psycopg

from pipeline.assets.embeddings import sentence_model_vectors
from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.resources import EmbedderResource, StoreResource
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from pipeline.training import promotion
from secrag.files.package_data import sql_dir

SQL = sql_dir()
# A registered model whose export the suite keeps, standing in for a trained one's int8 export: what serves is
# whichever model the promoted row names.
SERVED = "all-MiniLM-L6-v2"
TRAINED = "attack-minilm-0000000000"
EMBEDDER = EmbedderResource(batch_size=16, threads=1)


def _records(source: str, n: int) -> list[Record]:
    return [
        Record(source=source, upstream_id=f"{source}-{i}", title=f"{source} {i}", body=f"{source} text number {i}")
        for i in range(n)
    ]


def _publish(db: psycopg.Connection, source: str, n: int, version: str) -> None:
    store = Store(SQL)
    store.register_source(db, SourceRow(name=source, kind="static"))
    store.publish(db, source=source, version=version, records=_records(source, n), lookup={}, chunking=ChunkConfig())


def _promote_one(db: psycopg.Connection) -> None:
    """A trained model recorded and promoted, its served model's vectors covering both ATT&CK sources."""
    for source in promotion.SOURCES:
        embed_pending(db, EMBEDDER.for_model(SERVED), SQL, source=source)
    promotion.record_trained(
        db,
        SQL,
        promotion.TrainedModel(
            model_id=TRAINED,
            served_model=SERVED,
            base_model=SERVED,
            data_digest="00" * 32,
            recipe={},
            validation={},
            baseline={},
            passed=True,
        ),
    )
    assert promotion.promote(db, SQL, TRAINED).changed


def _progress(done: int, total: int) -> None:
    assert 0 < done <= total


def test_a_new_chunk_of_an_attack_source_gets_the_promoted_models_vector(
    db: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    store = StoreResource(database_url=db_url, work_dir=str(tmp_path))
    for source in (*promotion.SOURCES, "notes"):
        _publish(db, source, 2, "v1")
    assert sentence_model_vectors(db, store, EMBEDDER, "mitre_attack_procedures", _progress) == {}  # none promoted
    _promote_one(db)

    _publish(db, "mitre_attack_procedures", 3, "v2")  # one more procedure example
    _publish(db, "notes", 3, "v2")
    assert promotion.coverage(db, SQL, SERVED) == 1
    assert sentence_model_vectors(db, store, EMBEDDER, "mitre_attack_procedures", _progress) == {
        "sentence_model": SERVED,
        "sentence_model_embedded": 1,
    }
    assert promotion.coverage(db, SQL, SERVED) == 0
    assert sentence_model_vectors(db, store, EMBEDDER, "mitre_attack_procedures", _progress) == {
        "sentence_model": SERVED,
        "sentence_model_embedded": 0,
    }
    # a source the sentence path does not read keeps only the configured model's vectors
    assert sentence_model_vectors(db, store, EMBEDDER, "notes", _progress) == {}
    notes = db.execute(
        "SELECT count(*) FROM chunks c JOIN embeddings e USING (content_hash) WHERE c.source = 'notes' "
        "AND e.model_id = %s",
        [SERVED],
    ).fetchone()
    assert notes == (0,)
