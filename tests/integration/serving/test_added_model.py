"""A model added through the operator's models file, end to end: a tiny BERT the test builds (random
weights, its own vocabulary, CLS pooling, query and document prefixes) exported to ONNX and int8, embedding
a small real store beside MiniLM (each model its own vectors and HNSW index), served by the API once the
pipeline activates it, with no vector threshold until one is measured for it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from pipeline.activation import activate_model_if_complete
from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.indexing import embedding_input
from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from pipeline.store import SourceRow, Store
from secrag.db import database
from secrag.errors import ConfigError
from secrag.files.package_data import package_path, sql_dir
from secrag.models.encoders import document_encoder
from secrag.models.onnx_export import export_onnx, file_sha256
from secrag.models.onnx_model import OnnxEncoder
from secrag.settings import DEFAULT_MODEL, get_settings
from serving.api.app import create_app
from serving.search.search_file import load_search_config
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy
from tests.plugins.tiny_model import DIMENSIONS, DOCUMENT_PREFIX, QUERY_PREFIX, TINY, TINY_INT8
from tests.plugins.upstream import SNAPSHOT

SQL_DIR = sql_dir()
SOURCES = {"cisa_kev": 20, "lolbas": 10}  # records kept per source: a store of a few dozen chunks
KEPT = "CVE-2021-44228"  # always among them
TEXTS = ["lsass memory dump", "CVE-2021-44228 log4j JNDI lookup", "rundll32 proxy execution"]


@pytest.fixture(scope="module")
def tiny_models(tiny_models_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The models folder of the tiny model's exports (MiniLM's stay in the suite's folder)."""
    return tmp_path_factory.mktemp("tiny-models")


def _publish(conn: object, store: Store) -> None:
    registry = default_registry()
    for name, limit in SOURCES.items():
        spec = registry[name]
        records = parse_source(spec, SNAPSHOT / name, version="test").records
        records = sorted(records, key=lambda r: r.upstream_id != KEPT)[:limit]
        store.register_source(conn, SourceRow(name=name, kind="online", description=spec.description))  # type: ignore[arg-type]
        store.publish(conn, source=name, version="v1", records=records, lookup={}, chunking=ChunkConfig())  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def store(pg_server_url: str, template_db: str, tiny_models: Path) -> Iterator[str]:
    """A small real store embedded with MiniLM (activated first), then with the tiny model, fp32 and
    int8, the int8 one activated as the pipeline does for the configured model once it covers every chunk."""
    with migrated_copy(pg_server_url, template_db, f"secrag_added_model_{os.getpid()}") as url:
        with database.connect(url, autocommit=True) as conn:
            _publish(conn, Store(SQL_DIR))
            minilm = document_encoder(DEFAULT_MODEL, batch_size=64, threads=1, cache_dir=get_settings().models_dir)
            embed_pending(conn, minilm, SQL_DIR)
            assert activate_model_if_complete(conn, SQL_DIR, DEFAULT_MODEL).active == DEFAULT_MODEL
            for model in (TINY, TINY_INT8):
                embed_pending(conn, document_encoder(model, batch_size=64, threads=1, cache_dir=tiny_models), SQL_DIR)
            assert activate_model_if_complete(conn, SQL_DIR, TINY_INT8).switched
        yield url


def test_export_quantise_and_encode_with_the_model_s_prefixes(tiny_models: Path) -> None:
    fp32_path, int8_path = export_onnx(TINY, tiny_models), export_onnx(TINY_INT8, tiny_models)
    assert fp32_path.name.startswith(f"{TINY}-") and int8_path.name.startswith(f"{TINY_INT8}-")
    for path in (fp32_path, int8_path):
        assert (path.parent / (path.name + ".sha256")).read_text().strip() == file_sha256(path)
    assert int8_path.stat().st_size < fp32_path.stat().st_size
    fp32, int8 = OnnxEncoder(TINY, tiny_models), OnnxEncoder(TINY_INT8, tiny_models)
    assert (int8.model_id, int8.dimensions) == (TINY_INT8, DIMENSIONS)
    queries = fp32.encode_queries(TEXTS)
    assert np.array_equal(queries, fp32.encode([QUERY_PREFIX + t for t in TEXTS]))
    assert np.array_equal(fp32.encode_documents(TEXTS), fp32.encode([DOCUMENT_PREFIX + t for t in TEXTS]))
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0)
    assert np.abs(queries - fp32.encode(TEXTS)).max() > 1e-4  # the prefix changes the vector
    assert np.sum(int8.encode_queries(TEXTS) * queries, axis=1).min() > 0.9  # int8 stays close to fp32


def test_the_onnx_export_pools_as_sentence_transformers_does(tiny_models: Path) -> None:
    """CLS pooling and the query prefix: the torch encoder (sentence-transformers, reading the folder's
    pooling config) and the ONNX one agree."""
    from secrag.models.embedder import Embedder

    torch_vectors = Embedder(TINY, batch_size=4, models_dir=tiny_models).encode_queries(TEXTS)
    onnx_vectors = OnnxEncoder(TINY, tiny_models).encode_queries(TEXTS)
    assert np.abs(torch_vectors - onnx_vectors).max() < 1e-4
    with pytest.raises(ConfigError, match="int8 ONNX model"):
        Embedder(TINY_INT8)


def test_the_models_coexist_each_with_its_own_index(store: str, tiny_models: Path) -> None:
    with database.connect(store) as conn:
        counts = dict(conn.execute("SELECT model_id, count(*) FROM embeddings GROUP BY model_id").fetchall())
        dims = dict(conn.execute("SELECT model_id, min(vector_dims(vector)) FROM embeddings GROUP BY model_id"))
        indexes = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'embeddings'")]
        distinct = conn.execute("SELECT count(DISTINCT content_hash) FROM chunks").fetchone()[0]  # type: ignore[index]
        title, text, stored = conn.execute(
            "SELECT c.title, c.enriched_text, e.vector::text FROM chunks c JOIN embeddings e USING (content_hash) "
            "WHERE e.model_id = %s ORDER BY c.content_hash LIMIT 1",
            (TINY,),
        ).fetchone()  # type: ignore[misc]
    assert counts == {DEFAULT_MODEL: distinct, TINY: distinct, TINY_INT8: distinct} and distinct > 20
    assert dims == {DEFAULT_MODEL: 384, TINY: DIMENSIONS, TINY_INT8: DIMENSIONS}
    for model, size in ((DEFAULT_MODEL, 384), (TINY, DIMENSIONS), (TINY_INT8, DIMENSIONS)):
        own = [d for d in indexes if f"'{model}'::text" in d and "hnsw" in d]
        assert len(own) == 1 and f"vector({size})" in own[0], indexes
    # the pipeline stored the chunk's vector with the document prefix
    expected = OnnxEncoder(TINY, tiny_models).encode_documents([embedding_input(title, text)])[0]
    assert np.allclose(np.array(stored.strip("[]").split(","), dtype=np.float32), expected, atol=1e-5)


def _search(api: TestClient, query: str, mode: str) -> dict:
    response = api.post("/v1/search", json={"query": query, "mode": mode, "k": 5})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_api_serves_the_added_model_without_a_threshold(
    store: str, tiny_models: Path, settings_for: Callable[..., ServingSettings], tmp_path: Path
) -> None:
    settings = settings_for(store, mcp_enabled=False, embedding_model=TINY_INT8, model_cache_dir=tiny_models)
    with TestClient(create_app(settings)) as api:
        vector = _search(api, "log4j remote code execution", "vector")
        assert vector["model"] == TINY_INT8 and len(vector["results"]) == 5
        assert vector["vector_threshold"] is None and vector["below_vector_threshold"] == 0
        hybrid = _search(api, KEPT, "hybrid")
        assert hybrid["model"] == TINY_INT8 and hybrid["results"][0]["doc_id"] == f"cisa_kev:{KEPT}"
        stats = api.get("/v1/stats").json()
        assert stats["serving_model"] == TINY_INT8
        active = {m["model_id"]: m["active"] for m in stats["models"]}
        assert {DEFAULT_MODEL, TINY, TINY_INT8} <= set(active) and [m for m, on in active.items() if on] == [TINY_INT8]
    pinned = settings_for(store, mcp_enabled=False, serving_model=DEFAULT_MODEL)  # MiniLM's vectors are still there
    with TestClient(create_app(pinned)) as api:
        minilm = _search(api, "log4j remote code execution", "vector")
        assert minilm["model"] == DEFAULT_MODEL and minilm["vector_threshold"] is not None
    measured = tmp_path / "search.yaml"  # once measured (bench/quality.py --vector-thresholds), its threshold applies
    measured.write_text(f"vector_thresholds: {{{TINY_INT8}: {{default: -1.0}}}}\n", encoding="utf-8")
    with TestClient(create_app(settings.model_copy(update={"search_config": measured}))) as api:
        assert _search(api, "log4j remote code execution", "vector")["vector_threshold"] == -1.0


def test_thresholds_of_a_model_not_listed_are_none(tiny_models_file: Path, tmp_path: Path) -> None:
    shipped = load_search_config(package_path("serving.search", "search.yaml"))
    assert shipped.vector_threshold(TINY_INT8, "natural") is None
    assert shipped.vector_threshold(DEFAULT_MODEL, "natural") is not None
    path = tmp_path / "search.yaml"
    path.write_text(f"vector_thresholds: {{{TINY}: {{default: 0.1, cve: 0.2}}}}\n", encoding="utf-8")
    assert load_search_config(path).vector_threshold(TINY, "cve") == 0.2  # a registered model may be listed
    path.write_text("vector_thresholds: {tiny-bort: {default: 0.1}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown embedding model 'tiny-bort'"):
        load_search_config(path)
