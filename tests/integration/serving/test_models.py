"""Two embedding models side by side: each with its own vectors and HNSW index, the API following the
pipeline's activation (or pinned by configuration), reported in every search response and in stats."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from pipeline.activation import activate_model_if_complete
from pipeline.embedding import embed_pending
from secrag.db import database
from secrag.files.package_data import sql_dir
from secrag.settings import get_settings
from serving.api.app import create_app
from serving.search.encoder import shared_encoder
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy

from . import corpus

FP32, INT8 = "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8"
SQL_DIR = sql_dir()


@pytest.fixture(scope="module")
def two_model_db(pg_server_url: str, template_db: str) -> Iterator[str]:
    """The serving corpus embedded with the fp32 model (active) and then the int8 one (not yet active)."""
    with migrated_copy(pg_server_url, template_db, f"secrag_models_{os.getpid()}") as url:
        with database.connect(url, autocommit=True) as conn:
            corpus.build(conn, SQL_DIR, shared_encoder(FP32).embedder)
            assert activate_model_if_complete(conn, SQL_DIR, FP32).active == FP32
            int8 = shared_encoder(INT8, cache_dir=get_settings().models_dir).embedder
            assert int8.model_id == INT8
            embed_pending(conn, int8, SQL_DIR, batch_size=128)
        yield url


def _model_of(api: TestClient, query: str = "dump lsass memory") -> tuple[str, list[str]]:
    payload = api.post("/v1/search", json={"query": query, "mode": "vector", "k": 5}).json()
    return payload["model"], [r["doc_id"] for r in payload["results"]]


def test_each_model_has_its_vectors_and_its_own_index(two_model_db: str) -> None:
    with database.connect(two_model_db) as conn:
        counts = dict(conn.execute("SELECT model_id, count(*) FROM embeddings GROUP BY model_id").fetchall())
        indexes = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'embeddings'")]
    assert counts[FP32] == counts[INT8] > 0
    for model in (FP32, INT8):
        assert sum(f"'{model}'::text" in d and "hnsw" in d for d in indexes) == 1, indexes


def test_the_api_follows_activation_and_a_pinned_api_does_not(
    two_model_db: str, settings_for: Callable[..., ServingSettings]
) -> None:
    following = create_app(settings_for(two_model_db, mcp_enabled=False))
    pinned = create_app(settings_for(two_model_db, mcp_enabled=False, serving_model=FP32))
    with TestClient(following) as api, TestClient(pinned) as fixed:
        model, before = _model_of(api)
        assert model == FP32 and before
        assert api.get("/v1/stats").json()["serving_model"] == FP32
        with database.connect(two_model_db, autocommit=True) as conn:
            assert activate_model_if_complete(conn, SQL_DIR, INT8).switched
        following.state.service.model._active.clear()  # the next check reads the activation (else within 30 s)
        model, after = _model_of(api)
        assert model == INT8 and len(after) == len(before)
        assert len(set(after) & set(before)) >= 3  # int8 vectors rank much as fp32's do
        stats = api.get("/v1/stats").json()
        assert stats["serving_model"] == INT8
        assert {m["model_id"]: m["active"] for m in stats["models"]} == {FP32: False, INT8: True}
        assert _model_of(fixed)[0] == FP32
        assert fixed.get("/v1/stats").json()["serving_model"] == FP32
