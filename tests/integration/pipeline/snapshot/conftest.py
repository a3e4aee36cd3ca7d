"""A real store to snapshot (the serving tests' corpus: public sources and private user folders, embedded with the
real model, plus a one-time document), its snapshot file, and the API over a store."""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.snapshot.export import export_snapshot
from pipeline.snapshot.loading import local_model
from pipeline.snapshot.manifest import ModelFacts
from pipeline.sources.records import Record
from pipeline.store import Access, SourceRow, Store
from secrag.db import database
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.search.encoder import shared_encoder
from serving.settings import ServingSettings
from tests.integration.serving import corpus
from tests.plugins.database import migrated_copy

SQL_DIR = sql_dir()
MODEL = "all-MiniLM-L6-v2"
INGESTED = "ingested_memo"
SECRETS = (b"zanzibaracme", b"zanzibarglobex", b"quokkamemo")  # words only the private documents hold


def add_one_time_document(conn: Any, embedder: Any) -> None:  # noqa: ANN401
    """A document `secrag ingest add` stored and the pipeline published: its file row and its source."""
    body = b"Memo: the quokkamemo incident response notes for LSASS dumping."
    conn.execute(
        Queries(SQL_DIR, "ingest").add,
        {
            "name": "memo",
            "filename": "memo.txt",
            "size": len(body),
            "sha256": hashlib.sha256(body).hexdigest(),
            "content": zlib.compress(body),
            "tenant": "acme",
            "acl_users": [],
            "acl_groups": [],
            "added_by": "test",
            "replace": False,
        },
    )
    store = Store(SQL_DIR)
    store.register_source(conn, SourceRow(name=INGESTED, kind="user_folder", category="user", description="memo"))
    record = Record(source=INGESTED, upstream_id="memo.txt", title="memo.txt", body=body.decode())
    store.publish(
        conn, source=INGESTED, version="v1", records=[record], lookup={}, chunking=ChunkConfig(), access=Access("acme")
    )
    embed_pending(conn, embedder, SQL_DIR)


@pytest.fixture(scope="session")
def source_store(pg_server_url: str, template_db: str) -> Iterator[str]:
    """The corpus store with a one-time document, embedded with the real model."""
    with migrated_copy(pg_server_url, template_db, f"secrag_snapshot_src_{os.getpid()}") as url:
        embedder = shared_encoder(MODEL).embedder
        with database.connect(url, autocommit=True) as conn:
            corpus.build(conn, SQL_DIR, embedder)
            add_one_time_document(conn, embedder)
            # What a refresh records with each publish (pipeline/refresh.py); the corpus publishes without one.
            conn.execute(
                "UPDATE source_versions SET details = details || jsonb_build_object('fingerprint', 'fp-' || source) "
                "WHERE status = 'published'"
            )
        yield url


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def model(models_dir: Path) -> ModelFacts:
    return local_model(MODEL, models_dir)


@pytest.fixture(scope="session")
def snapshot_file(source_store: str, models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("snapshot") / "store.tar"
    export_snapshot(source_store, SQL_DIR, models_dir, target)
    return target


@pytest.fixture
def fresh_store(pg_server_url: str, template_db: str) -> Callable[[str], AbstractContextManager[str]]:
    """A migrated, empty database by name (dropped after)."""
    return lambda name: migrated_copy(pg_server_url, template_db, f"{name}_{os.getpid()}")


def api(url: str, **overrides: Any) -> TestClient:  # noqa: ANN401
    """The API over `url`, its quotas, caches and warm-up off, with `overrides` (a model, its cache) on top."""
    settings = ServingSettings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=url,
        pool_max_size=2,
        anonymous_rate_per_minute=0,
        rate_per_minute=0,
        failed_keys_per_minute=0,
        anonymous_heavy_concurrency=0,
        heavy_concurrency=0,
        result_cache_size=0,
        warm_up=False,
        **overrides,
    )
    return TestClient(create_app(settings))
