"""End to end: the whole graph on real data of three sources, from local mirrors into a real store."""

from __future__ import annotations

from typing import Any

import dagster as dg
import pytest

from pipeline.assets.ingested import INGESTED_EMBEDDINGS_KEY, INGESTED_KEY
from pipeline.assets.keys import LOOKUP_KEY, NO_SHRINK, embeddings_key, source_key
from pipeline.assets.sources import REQUESTED_VERSION_TAG
from secrag.settings import DEFAULT_MODEL
from tests.plugins.graph import SOURCES, Harness
from tests.plugins.mirror_changes import add_commit

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster"),
]


def _metadata(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict[str, Any]:
    [event] = result.asset_materializations_for_node(key.to_python_identifier())
    return {k: v.value for k, v in event.metadata.items()}


def _checks(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
    return {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}


def test_full_build_publishes_embeds_and_checks_every_asset(built_store, mirror):
    _, result = built_store
    assert result.success
    materialized = {
        e.asset_key for e in result.get_asset_materialization_events() for e in [e.event_specific_data.materialization]
    }
    one_time = {INGESTED_KEY, INGESTED_EMBEDDINGS_KEY}  # no document stored with `secrag ingest`: nothing to do
    expected = {LOOKUP_KEY, *one_time, *(source_key(s) for s in SOURCES), *(embeddings_key(s) for s in SOURCES)}
    assert materialized == expected
    checks = _checks(result)
    assert len(checks) == 2 * 3 + 5 * 3 + 1  # publish checks, 5 later checks per source, lookup non-empty
    failed = sorted(k for k, e in checks.items() if not e.passed)
    assert failed == [], failed
    car = _metadata(result, source_key("mitre_car"))
    assert car["version"] == mirror.head("mitre_car")
    assert car["records"] == car["inserted"] == 25
    assert car["dagster/row_count"] == 25 and car["dagster/uri"] == car["url"]
    assert {"url", "skipped", "skipped_sample", "seconds", "deleted", "unchanged", "updated"} <= car.keys()
    emb = _metadata(result, embeddings_key("hijacklibs"))
    assert emb["chunks"] == emb["embedded"] + emb["reused"] > 0
    assert emb["model"] == emb["active_model"] == DEFAULT_MODEL  # complete at once: activated


def test_data_version_is_the_published_upstream_version(built_store, mirror):
    _, result = built_store
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == source_key("mitre_car"):
            assert mat.tags["dagster/data_version"] == mirror.head("mitre_car")
        if mat.asset_key == source_key("mitre_attack"):
            assert mat.tags["dagster/data_version"].startswith("mirror-")  # the release tag


def test_store_holds_every_source_and_a_vector_for_every_chunk(built: Harness):
    with built.connect() as conn:
        rows = dict(
            conn.execute(
                "SELECT name, record_count FROM sources JOIN source_status USING (name) WHERE state = 'ok'"
            ).fetchall()
        )
        missing = conn.execute(
            "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
            "WHERE e.content_hash = c.content_hash)"
        ).fetchone()[0]
        techniques = conn.execute("SELECT count(*) FROM mitre_techniques").fetchone()[0]
    assert set(rows) == set(SOURCES) and rows["mitre_car"] == 25 and rows["hijacklibs"] == 40
    assert missing == 0
    assert techniques > 20


def test_noop_refresh_embeds_nothing(built: Harness):
    result = built.materialize("key:sources/mitre_car+")
    meta = _metadata(result, source_key("mitre_car"))
    assert (meta["unchanged"], meta["inserted"], meta["updated"], meta["deleted"]) == (25, 0, 0, 0)
    assert (meta["added"], meta["modified"], meta["removed"]) == (0, 0, 0)
    assert meta["status"] == "unchanged"  # same version, parser, chunker and names: no fetch, no parse
    assert _metadata(result, embeddings_key("mitre_car"))["embedded"] == 0


def test_one_changed_record_embeds_only_its_chunks(built: Harness):
    rel = "analytics/CAR-2013-01-002.yaml"
    with built.connect() as conn:
        before = conn.execute("SELECT count(*) FROM chunks WHERE doc_id = 'mitre_car:CAR-2013-01-002'").fetchone()[0]
    data = _snapshot_file(built, rel)
    new_head = add_commit(
        built.mirror, "mitre_car", {rel: data.replace(b"description: ", b"description: Updated. ", 1)}
    )
    result = built.materialize("key:sources/mitre_car+")
    meta = _metadata(result, source_key("mitre_car"))
    assert meta["version"] == new_head
    assert (meta["updated"], meta["unchanged"], meta["inserted"], meta["deleted"]) == (1, 24, 0, 0)
    assert (meta["added"], meta["modified"], meta["removed"]) == (0, 1, 0)  # what the change history records
    with built.connect() as conn:
        recorded = conn.execute(
            "SELECT doc_id, change, new_version FROM document_changes WHERE change = 'modified'"
        ).fetchall()
    assert recorded == [("mitre_car:CAR-2013-01-002", "modified", new_head)]
    embedded = _metadata(result, embeddings_key("mitre_car"))["embedded"]
    assert 1 <= embedded <= before
    assert _metadata(result, embeddings_key("mitre_car"))["embedded_at"] >= meta["published_at"]


def test_pin_publishes_an_older_version(built: Harness):
    old = built.mirror.head("mitre_car")
    rel = "analytics/CAR-2013-01-002.yaml"
    add_commit(built.mirror, "mitre_car", {rel: None})
    built.materialize("key:sources/mitre_car")
    config = {"ops": {"sources__mitre_car": {"config": {"pin": old}}}}
    result = built.materialize("key:sources/mitre_car+", run_config=config)
    meta = _metadata(result, source_key("mitre_car"))
    assert meta["version"] == old and meta["pinned"] is True and meta["inserted"] == 1
    with built.connect() as conn:
        assert conn.execute("SELECT current_version FROM sources WHERE name = 'mitre_car'").fetchone()[0] == old


def test_force_republishes_an_unchanged_version(built: Harness):
    config = {"ops": {"sources__mitre_car": {"config": {"force": True}}}}
    result = built.materialize("key:sources/mitre_car", run_config=config)
    meta = _metadata(result, source_key("mitre_car"))
    assert meta["status"] == "published" and meta["unchanged"] == 25


def test_sensor_run_publishes_the_version_its_tick_saw(built: Harness):
    seen = built.mirror.head("mitre_car")
    add_commit(built.mirror, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})  # upstream moves on
    result = built.materialize("key:sources/mitre_car", tags={REQUESTED_VERSION_TAG: seen})
    assert _metadata(result, source_key("mitre_car"))["version"] == seen


def test_suspicious_shrink_is_refused_then_forced(built: Harness):
    old = built.mirror.head("mitre_car")
    files = sorted(p for p in _snapshot_files(built) if p.startswith("analytics/"))
    add_commit(built.mirror, "mitre_car", {rel: None for rel in files[5:]})
    result = built.materialize("key:sources/mitre_car+", raise_on_error=False)
    assert not result.success
    check = _checks(result)[("sources/mitre_car", NO_SHRINK)]
    assert not check.passed and check.blocking
    assert not result.asset_materializations_for_node("embeddings__mitre_car")
    with built.connect() as conn:
        state = conn.execute(
            "SELECT current_version, record_count, state FROM sources JOIN source_status USING (name) "
            "WHERE name = 'mitre_car'"
        ).fetchone()
    assert state == (old, 25, "refused")
    forced = built.materialize(
        "key:sources/mitre_car+", run_config={"ops": {"sources__mitre_car": {"config": {"force": True}}}}
    )
    meta = _metadata(forced, source_key("mitre_car"))
    assert (meta["records"], meta["deleted"]) == (5, 20)


def _snapshot_files(built: Harness) -> list[str]:
    import subprocess

    out = subprocess.run(
        ["git", "--git-dir", str(built.mirror.git_dir("mitre_car")), "ls-tree", "-r", "--name-only", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def _snapshot_file(built: Harness, rel: str) -> bytes:
    import subprocess

    return subprocess.run(
        ["git", "--git-dir", str(built.mirror.git_dir("mitre_car")), "show", f"HEAD:{rel}"],
        check=True,
        capture_output=True,
    ).stdout
