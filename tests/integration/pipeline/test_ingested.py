"""The one-time documents' assets and sensor on a real store and a real Dagster instance: each stored file
is published as its own source with its ACL, embedded with the real model, and a removal unpublishes it."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import dagster as dg
import psycopg

from pipeline.assets.ingested import build_ingested_assets, ingested_sensor
from pipeline.resources import EmbedderResource, StoreResource


def _store(db: psycopg.Connection, name: str, filename: str, data: bytes, **acl: object) -> None:
    db.execute(
        "INSERT INTO ingested_documents (name, filename, size, sha256, content, tenant, acl_users, acl_groups,"
        " added_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'test')",
        [
            name,
            filename,
            len(data),
            hashlib.sha256(data).hexdigest(),
            zlib.compress(data),
            acl.get("tenant"),
            acl.get("users", []),
            acl.get("groups", []),
        ],
    )


def test_stored_files_are_published_embedded_and_removed(db: psycopg.Connection, db_url: str, tmp_path: Path) -> None:
    resources = {"store": StoreResource(database_url=db_url, work_dir=str(tmp_path)), "embedder": EmbedderResource()}
    ingested_documents, ingested_embeddings = build_ingested_assets(chunker_version="test", embed_code="test")
    _store(db, "runbook", "runbook.md", b"# Runbook\n\nIsolate the host, dump lsass (T1003.001).\n", tenant="acme",
           groups=["ir"])  # fmt: skip
    _store(db, "notes", "notes.txt", b"Public notes on credential dumping.")
    _store(db, "broken", "broken.txt", b"\xff\xfe not UTF-8")  # reported, and the others still publish
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources=resources)
        first = ingested_sensor(context)
        assert len(first.run_requests) == 1
        assert ingested_sensor(
            dg.build_sensor_context(instance=instance, resources=resources, cursor=first.cursor)
        ).skip_reason
        result = dg.materialize([ingested_documents, ingested_embeddings], resources=resources, instance=instance)
        assert result.success
        [published] = [
            m for m in result.get_asset_materialization_events() if m.asset_key.path == ["ingested", "documents"]
        ]
        metadata = published.event_specific_data.materialization.metadata
        assert metadata["published"].value == 2 and "not UTF-8" in str(metadata["unreadable"].value["broken"])
        rows = db.execute(
            "SELECT d.source, d.tenant, d.acl_groups, d.media_type, s.kind FROM documents d"
            " JOIN sources s ON s.name = d.source ORDER BY d.source"
        ).fetchall()
        assert rows == [
            ("ingested_notes", None, [], "text/plain", "user_folder"),
            ("ingested_runbook", "acme", ["ir"], "text/markdown", "user_folder"),
        ]
        unembedded = db.execute(
            "SELECT count(*) FROM chunks c WHERE c.source LIKE 'ingested_%' AND NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash)"
        ).fetchone()
        assert unembedded == (0,)
        db.execute("UPDATE ingested_documents SET removed_at = now() WHERE name = 'runbook'")
        changed = ingested_sensor(dg.build_sensor_context(instance=instance, resources=resources, cursor=first.cursor))
        assert len(changed.run_requests) == 1
        assert dg.materialize([ingested_documents], resources=resources, instance=instance).success
    assert db.execute("SELECT source FROM documents WHERE source LIKE 'ingested_%'").fetchall() == [("ingested_notes",)]
    assert db.execute("SELECT name FROM ingested_documents ORDER BY name").fetchall() == [("broken",), ("notes",)]
