"""After an import, the pipeline's refresh of a source whose upstream has not moved finds it unchanged (nothing
fetched or published), and a source whose upstream moved is published as usual: the imported versions count
as current."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psycopg

from pipeline.chunking import ChunkConfig
from pipeline.refresh import RefreshLimits, refresh_source
from pipeline.snapshot.export import export_snapshot
from pipeline.snapshot.loading import import_snapshot, local_model
from pipeline.sources.mirror import Mirror
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.registry import SourceSpec
from pipeline.sources.upstream import UpstreamConfig
from pipeline.store import Store
from secrag.db import database
from secrag.db.queries import Queries
from tests.plugins.database import migrated_copy
from tests.plugins.mirror_changes import add_commit

from .conftest import SQL_DIR

SOURCE = "hijacklibs"


def attempts(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT status, version FROM source_versions WHERE source = %s ORDER BY id", [SOURCE]
    ).fetchall()


def test_an_imported_source_is_refreshed_only_once_its_upstream_moves(
    db: psycopg.Connection,
    db_url: str,
    pg_server_url: str,
    template_db: str,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
    upstream_config: Callable[..., UpstreamConfig],
    models_dir: Path,
    tmp_path: Path,
) -> None:
    mirror = mirror_factory([SOURCE], fresh=True)
    spec = source_specs[SOURCE]

    def refresh(conn: psycopg.Connection) -> Any:  # noqa: ANN401
        limits = RefreshLimits(ChunkConfig(), max_shrink=0.5, max_error_share=0.2, work_dir=tmp_path)
        upstream = OnlineUpstream(upstream_config(mirror))
        return refresh_source(spec, upstream, conn, Store(SQL_DIR), Queries(SQL_DIR, "pipeline"), limits)

    built = refresh(db)
    assert built.status == "published"
    snapshot = tmp_path / "store.tar"
    manifest = export_snapshot(db_url, SQL_DIR, models_dir, snapshot).manifest
    assert [(s.name, s.version) for s in manifest.sources] == [(SOURCE, built.version)]

    with migrated_copy(pg_server_url, template_db, "secrag_snapshot_refresh") as url:
        with database.connect(url, autocommit=True) as conn:
            import_snapshot(conn, SQL_DIR, snapshot, local_model(manifest.model.id, models_dir))
            assert attempts(conn) == [("published", built.version)]

            again = refresh(conn)
            assert again.status == "unchanged" and again.version == built.version
            assert again.fetched is None  # nothing fetched, parsed or published
            assert attempts(conn) == [("published", built.version), ("unchanged", built.version)]

            moved = add_commit(mirror, SOURCE, {"yml/zz_snapshot_test.yml": b"Name: zz.dll\nAuthor: test\n"})
            after = refresh(conn)
            assert after.status == "published" and after.version == moved != built.version
