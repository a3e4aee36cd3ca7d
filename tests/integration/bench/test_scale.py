"""bench/scale.py's growth on small real data: a store refreshed from the small snapshot grown both ways, near-duplicate
copies and mixed notes, to about twice its chunks, every new chunk with a vector of the active model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pipeline.resources import StoreResource
from secrag.db import database
from secrag.models.embedder import TextModel
from secrag.models.encoders import document_encoder
from tests.plugins.tiny_model import TINY

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # a script beside its siblings
import scale  # noqa: E402

import refresh_work as rw  # noqa: E402

UNEMBEDDED = (
    "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e"
    " WHERE e.content_hash = c.content_hash AND e.model_id = %s)"
)


@pytest.fixture(scope="module")
def tiny_encoder(tiny_models_file: Path, tmp_path_factory: pytest.TempPathFactory) -> TextModel:
    encoder = document_encoder(TINY, batch_size=64, threads=1, cache_dir=tmp_path_factory.mktemp("tiny-onnx"))
    encoder.load()
    return encoder


@pytest.mark.parametrize("texts", ["copies", "mixed"])
def test_a_store_grows_to_its_target_with_a_vector_for_every_chunk(
    texts: str, db_url: str, small_snapshot: Path, tmp_path: Path, tiny_encoder: TextModel
) -> None:
    specs = rw.selected("mitre_attack,mitre_car")
    mirror = rw.mirror_of(small_snapshot, tmp_path, [s.name for s in specs])
    store = StoreResource(database_url=db_url, work_dir=str(tmp_path / "work"))
    with store.connect() as conn:
        bench = rw.Bench(conn, store, rw.upstream_of(mirror), tiny_encoder, 256)
        assert [rw.refresh_once(bench, spec, "settle").status for spec in specs] == ["published"] * 2
    with database.connect(db_url, autocommit=True) as conn:
        base = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        if texts == "mixed":
            scale.grow_mixed(conn, TINY, base, 2 * base)
        else:
            scale.grow(conn, TINY, base, 2 * base, 0.015)
        grown = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        unembedded = conn.execute(UNEMBEDDED, [TINY]).fetchone()[0]
        copies = conn.execute("SELECT count(*) FROM documents WHERE doc_id LIKE '%~1'").fetchone()[0]
    assert base > 0 and 2 * base <= grown < 3 * base
    assert unembedded == 0 and copies > 0
