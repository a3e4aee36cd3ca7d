"""GET /v1/sources judges freshness as the source's Dagster check does (one rule: secrag/freshness.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from fastapi.testclient import TestClient

from pipeline.checks import freshness_verdict
from pipeline.chunking import ChunkConfig
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from secrag.db import database
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.settings import ServingSettings

POLLED = {"quiet": 180, "stalled": 180, "moving": 600, "stuck": 180}


def test_sources_report_the_freshness_of_the_dagster_check(
    db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    store, pipeline = Store(sql_dir()), Queries(sql_dir(), "pipeline")
    with database.connect(db_url, autocommit=True) as conn:
        for name, interval in POLLED.items():
            store.register_source(conn, SourceRow(name=name, kind="online", tracking="commit", poll_interval=interval))
            record = Record(source=name, upstream_id="r1", title="A rule", body="Detects a thing.")
            store.publish(conn, source=name, version="v1", records=[record], lookup={}, chunking=ChunkConfig())
            store.record_check(conn, name, "v1")
        store.record_check(conn, "moving", "v2")  # just seen: being refreshed, still fresh
        store.record_check(conn, "stuck", "v2")
        conn.execute("UPDATE sources SET seen_since = now() - interval '1 hour' WHERE name = 'stuck'")
        conn.execute("UPDATE sources SET last_check_at = now() - interval '1 hour' WHERE name = 'stalled'")
        store.register_source(conn, SourceRow(name="notes", kind="user_folder"))
        checks = {
            name: freshness_verdict(
                conn.execute(pipeline.source_state, {"source": name}).fetchone(), interval, datetime.now(UTC)
            )
            for name, interval in POLLED.items()
        }
    with TestClient(create_app(settings_for(db_url))) as client:
        listed = {s["name"]: s for s in client.get("/v1/sources").json()["sources"]}
    for name, (passed, facts) in checks.items():
        assert (listed[name]["fresh"], listed[name]["stale_reason"]) == (passed, facts.get("reason")), name
        assert listed[name]["poll_interval"] == POLLED[name]
    assert [n for n in POLLED if listed[n]["fresh"]] == ["quiet", "moving"]
    assert "not answered a probe" in listed["stalled"]["stale_reason"]
    assert "waited" in listed["stuck"]["stale_reason"]
    assert "notes" not in listed  # an anonymous caller sees no user folder
