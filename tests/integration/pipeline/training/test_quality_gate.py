"""The sentence model's quality gate through Dagster: the asset `models/sentence_model` materialized on a real
instance over a store whose outcome is known by construction, once with a candidate that must not be promoted
and once with one that must.

The tiny BERT of tests/plugins/tiny_model.py is the general model (cheap to fine-tune, export and embed). A
model is degraded by its stored vectors: each ATT&CK document holds the vector, as the general model embeds
it, of the same document of the next technique, so every neighbour a held-back sentence finds votes for a
technique other than its own. The general model's own vectors are stored as it embeds them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
import pytest

from pipeline.assets.keys import SENTENCE_MODEL_KEY, SENTENCE_QUALITY
from pipeline.assets.sentence_model import build_sentence_model_asset
from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.resources import EmbedderResource, StoreResource
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from pipeline.training import promotion
from pipeline.training.examples import read_labelled
from pipeline.training.fine_tune import Recipe
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from secrag.models.encoders import document_encoder
from secrag.models.trained import int8_id, trained_id
from secrag.settings import get_settings
from tests.plugins.tiny_model import DIMENSIONS, TINY, TINY_INT8

from .test_trainer import TECHNIQUES, _technique_records

SQL = sql_dir()
# 30 actors, each with every example of every technique: 1,200 examples, the 40 of each of G0008, G0011 and
# G0020 held back (holdout 8, the asset's): 1,080 to train on, past the asset's minimum of 1,000. An example's
# text is the same whatever its actor, so the store holds 48 distinct chunks to embed (40 examples, 8 techniques).
ACTORS = [f"G{i:04d}" for i in range(1, 31)]
VALIDATION_ACTORS = {"G0008", "G0011", "G0020"}
DOCUMENTS, DISTINCT_CHUNKS = 1208, 48


def _records() -> dict[str, list[Record]]:
    techniques = _technique_records()
    procedures = [
        Record(
            source="mitre_attack_procedures",
            upstream_id=f"relationship--{i}-{j}-{actor}",
            title=f"Procedure of {tid} {name}",
            body=f"The group {phrase}",
            techniques=(tid,),
            metadata={"kind": "procedure", "actor_id": actor, "actor_name": f"Group {actor[1:]}"},
        )
        for i, (tid, name, _, _, phrases) in enumerate(TECHNIQUES)
        for j, phrase in enumerate(phrases)
        for actor in ACTORS
    ]
    return {"mitre_attack": techniques, "mitre_attack_procedures": procedures}


def _next_technique(doc_id: str) -> str:
    """The same document of the next technique (the last one's: the first's)."""
    ids = [tid for tid, *_ in TECHNIQUES]
    source, _, upstream = doc_id.partition(":")
    if source == "mitre_attack":
        return f"{source}:{ids[(ids.index(upstream) + 1) % len(ids)]}"
    _, _, rest = upstream.partition("--")
    i, j, actor = rest.split("-")
    return f"{source}:relationship--{(int(i) + 1) % len(ids)}-{j}-{actor}"


@pytest.fixture
def models_dir(tiny_models_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A models folder of this test's own (the trained models and their exports), the tiny model registered."""
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(folder))
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


@pytest.fixture
def store(db: psycopg.Connection, models_dir: Path) -> psycopg.Connection:
    """Both ATT&CK sources published and embedded with the general model, as the pipeline leaves them before a
    training."""
    publisher = Store(SQL)
    for source, records in _records().items():
        publisher.register_source(db, SourceRow(name=source, kind="static"))
        publisher.publish(db, source=source, version="v18.1", records=records, lookup={}, chunking=ChunkConfig())
    general = document_encoder(TINY_INT8, batch_size=64, threads=1, cache_dir=models_dir)
    for source in promotion.SOURCES:
        embed_pending(db, general, SQL, source=source)
    return db


def _degrade(db: psycopg.Connection, model: str) -> None:
    """Store `model`'s vectors of every ATT&CK chunk as the general model's vectors of the next technique's."""
    rows = db.execute(
        "SELECT c.doc_id, c.content_hash, e.vector FROM chunks c "
        "JOIN embeddings e ON e.content_hash = c.content_hash AND e.model_id = %s WHERE c.source = ANY(%s)",
        [TINY_INT8, list(promotion.SOURCES)],
    ).fetchall()
    assert len({doc_id for doc_id, _, _ in rows}) == len(rows) == DOCUMENTS  # one chunk a document
    vectors = {doc_id: vector for doc_id, _, vector in rows}
    moved = {content_hash: vectors[_next_technique(doc_id)] for doc_id, content_hash, _ in rows}
    db.execute(Queries(SQL, "store").ensure_model, {"model": model, "dimensions": DIMENSIONS})
    with db.cursor() as cur:
        cur.executemany(
            "INSERT INTO embeddings (content_hash, model_id, vector) VALUES (%s, %s, %s)",
            [(content_hash, model, vector) for content_hash, vector in moved.items()],
        )


def _materialize(steps: int, db_url: str, work: Path) -> dg.ExecuteInProcessResult:
    """The sentence model asset of `steps` training steps, materialized on a real (ephemeral) Dagster instance
    with the pipeline's resources over the test's store, the tiny model as the general one."""
    return dg.materialize(
        [build_sentence_model_asset(steps)],
        instance=dg.DagsterInstance.ephemeral(),
        resources={
            "store": StoreResource(database_url=db_url, work_dir=str(work)),
            "embedder": EmbedderResource(model=TINY_INT8, batch_size=64, threads=1),
        },
    )


def _observed(result: dg.ExecuteInProcessResult) -> tuple[dg.AssetCheckEvaluation, dict[str, Any]]:
    """The run's gate (its check's evaluation) and the model's materialization metadata, as Dagster recorded them."""
    [check] = result.get_asset_check_evaluations()
    assert check.asset_check_key == dg.AssetCheckKey(SENTENCE_MODEL_KEY, SENTENCE_QUALITY)
    [materialization] = result.get_asset_materialization_events()
    assert materialization.asset_key == SENTENCE_MODEL_KEY
    metadata = materialization.step_materialization_data.materialization.metadata
    return check, {k: getattr(v, "value", v) for k, v in metadata.items()}


def _statuses(db: psycopg.Connection) -> dict[str, str]:
    return {m.model_id: m.status for m in promotion.trained(db, SQL)}


def _serving(db: psycopg.Connection) -> list[str]:
    """The sentence path's model as the API reads it (none: the general model serves)."""
    return [m for (m,) in db.execute(Queries(SQL, "serving").promoted_sentence_model).fetchall()]


def test_a_degraded_candidate_is_kept_back_and_a_sound_one_replaces_a_degraded_model(
    store: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    db = store
    data = read_labelled(db, SQL)  # the asset's split (holdout 8)
    assert {e.actor for e in data.validation} == VALIDATION_ACTORS and len(data.train) == 1080
    one = trained_id(TINY, Recipe(steps=1).as_dict(), data.digest())  # the model a 1-step training names

    # 1. Nothing promoted: the general model serves and is the gate's baseline. The candidate's vectors are
    # degraded before the run (the training finds them stored and embeds nothing), so it must not pass.
    _degrade(db, int8_id(one))
    check, metadata = _observed(_materialize(1, db_url, tmp_path / "work"))
    assert metadata["model"] == int8_id(one) and metadata["embedded"] == 0 and metadata["trained"] is True
    assert check.passed is False and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["compared_with"].value == TINY_INT8
    assert (metadata["passed"], metadata["promoted"]) == (False, False)
    assert metadata["validation/both_ndcg10"] < metadata["baseline/both_ndcg10"]
    assert _statuses(db) == {one: "rejected"} and promotion.promoted(db, SQL) is None and _serving(db) == []

    # 2. The degraded model serves (forced past its gate, as an operator can), and a 2-step training's
    # candidate, embedded by the run as the model embeds, must pass against it and replace it.
    promotion.promote(db, SQL, one, force=True)
    assert _serving(db) == [int8_id(one)]
    check, metadata = _observed(_materialize(2, db_url, tmp_path / "work"))
    two = str(metadata["model"]).removesuffix("-int8")
    assert two != one and metadata["embedded"] == DISTINCT_CHUNKS and metadata["trained"] is True
    assert check.passed is True and check.metadata["compared_with"].value == int8_id(one)
    assert (metadata["passed"], metadata["promoted"]) == (True, True)
    assert _statuses(db) == {one: "retired", two: "promoted"} and _serving(db) == [int8_id(two)]
    served = promotion.promoted(db, SQL)
    assert served is not None and served.model_id == two and served.replaces == one
    assert metadata["validation/both_ndcg10"] > metadata["baseline/both_ndcg10"]
