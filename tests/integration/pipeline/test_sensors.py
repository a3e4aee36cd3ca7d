"""Sensors through their cursor: an observation per new upstream version, none when unchanged, failed ticks."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from pipeline.assets.keys import upstream_key
from pipeline.folders import FolderSpec
from pipeline.resources import UpstreamResource
from pipeline.sources.mirror import Mirror
from secrag.errors import FetchError
from tests.plugins.graph import Harness, harness
from tests.plugins.mirror_changes import add_commit

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")


@pytest.fixture
def graph(db_url: str, mirror: Mirror, tmp_path: Path, small_specs) -> Harness:
    return harness(db_url, mirror, tmp_path / "work", small_specs)


def tick(h: Harness, name: str, cursor: str | None, resources: dict | None = None) -> dg.SensorResult:
    sensor = h.defs.resolve_sensor_def(name)
    context = dg.build_sensor_context(cursor=cursor, resources=resources or h.resources, instance=h.instance)
    return sensor(context)


def test_first_tick_observes_the_upstream_and_requests_no_run(graph: Harness):
    """The sensor records the version; the automation sensor decides what to run."""
    head = graph.mirror.head("mitre_car")
    result = tick(graph, "mitre_car_upstream", None)
    assert not result.run_requests
    assert result.cursor == head
    [event] = result.asset_events
    assert event.asset_key == upstream_key("mitre_car") and event.tags["dagster/data_version"] == head
    with graph.connect() as conn:
        assert conn.execute("SELECT last_seen_version FROM sources WHERE name = 'mitre_car'").fetchone()[0] == head


def test_unchanged_upstream_keeps_the_cursor(graph: Harness):
    head = graph.mirror.head("mitre_car")
    result = tick(graph, "mitre_car_upstream", head)
    assert not result.run_requests
    assert result.cursor is None  # unchanged: Dagster keeps the stored cursor
    assert result.skip_reason is not None and len(result.asset_events) == 1


def test_new_commit_moves_the_cursor_once(graph: Harness):
    cursor = tick(graph, "mitre_car_upstream", None).cursor
    new = add_commit(graph.mirror, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    first = tick(graph, "mitre_car_upstream", cursor)
    assert first.cursor == new and first.asset_events[0].tags["dagster/data_version"] == new
    again = tick(graph, "mitre_car_upstream", first.cursor)
    assert again.cursor is None and again.skip_reason is not None


def test_probe_failure_is_a_failed_tick(graph: Harness, tmp_path: Path):
    broken = {
        **graph.resources,
        "upstream": UpstreamResource(repo_overrides={"mitre_car": (tmp_path / "gone.git").as_uri()}, probe_timeout=5),
    }
    with pytest.raises(FetchError):
        tick(graph, "mitre_car_upstream", "previous", broken)


def test_every_sensor_runs_by_default(graph: Harness):
    sensors = graph.defs.sensors or []
    assert sensors and all(s.default_status == dg.DefaultSensorStatus.RUNNING for s in sensors)


@pytest.fixture
def folder(tmp_path: Path, db_url: str, mirror: Mirror, small_specs) -> tuple[Harness, Path]:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\nabout T1003.001\n")
    (root / "b.txt").write_text("bravo")
    spec = FolderSpec(name="team_docs", path=root, tenant="acme", users=("alice",), groups=("soc",))
    return harness(db_url, mirror, tmp_path / "work", small_specs, folders=[spec]), root


def test_folder_sensor_sees_new_changed_and_deleted_files(folder):
    h, root = folder
    first = tick(h, "team_docs_folder", None)
    assert len(first.run_requests) == 1
    assert first.run_requests[0].tags["secrag/files_new"] == "2"
    quiet = tick(h, "team_docs_folder", first.cursor)
    assert not quiet.run_requests
    (root / "b.txt").write_text("bravo")  # touched, same content: no run
    assert not tick(h, "team_docs_folder", quiet.cursor).run_requests
    (root / "b.txt").write_text("bravo, changed")
    (root / "a.md").unlink()
    (root / "c.json").write_text('{"k": 1}')
    changed = tick(h, "team_docs_folder", quiet.cursor)
    [request] = changed.run_requests
    assert {k: request.tags[f"secrag/files_{k}"] for k in ("new", "changed", "deleted")} == {
        "new": "1",
        "changed": "1",
        "deleted": "1",
    }
    assert request.run_key != first.run_requests[0].run_key


def test_folder_asset_publishes_changes_and_deletions_with_access(folder):
    h, root = folder
    (root / "page.html").write_text(
        "<html><head><title>Runbook</title><script>x()</script></head><body><p>Contain the host.</p></body></html>"
    )
    (root / "bad.json").write_text("{nope")
    result = h.materialize("key:folders/team_docs+")
    meta = {k: v.value for k, v in result.asset_materializations_for_node("folders__team_docs")[0].metadata.items()}
    assert meta["records"] == 3 and meta["skipped"] == 1 and "bad.json" in meta["file_errors"]
    with h.connect() as conn:
        rows = conn.execute("SELECT doc_id, tenant, acl_users, acl_groups FROM documents ORDER BY doc_id").fetchall()
        kind = conn.execute("SELECT kind FROM sources WHERE name = 'team_docs'").fetchone()[0]
    assert [r[0] for r in rows] == ["team_docs:a.md", "team_docs:b.txt", "team_docs:page.html"]
    assert all(r[1:] == ("acme", ["alice"], ["soc"]) for r in rows) and kind == "user_folder"
    (root / "b.txt").write_text("bravo, changed")
    (root / "page.html").unlink()
    again = h.materialize("key:folders/team_docs+")
    meta = {k: v.value for k, v in again.asset_materializations_for_node("folders__team_docs")[0].metadata.items()}
    assert (meta["updated"], meta["deleted"], meta["unchanged"]) == (1, 1, 1)
    emb = again.asset_materializations_for_node("embeddings__team_docs")[0].metadata
    assert emb["embedded"].value == 1


def test_folder_acl_change_emptying_and_a_missing_folder(
    folder, db_url: str, mirror: Mirror, small_specs, tmp_path: Path
):
    h, root = folder
    h.materialize("key:folders/team_docs")
    moved = FolderSpec(name="team_docs", path=root, tenant="acme", users=("bob",), groups=())
    h2 = harness(db_url, mirror, tmp_path / "work2", small_specs, folders=[moved])
    old_code = h.defs.resolve_asset_graph().get(dg.AssetKey(["folders", "team_docs"])).code_version
    new_code = h2.defs.resolve_asset_graph().get(dg.AssetKey(["folders", "team_docs"])).code_version
    assert old_code != new_code  # automation re-publishes a folder whose ACL changed
    h2.materialize("key:folders/team_docs")
    with h2.connect() as conn:
        acl = conn.execute(
            "SELECT DISTINCT tenant, acl_users, acl_groups FROM documents WHERE source = 'team_docs'"
        ).fetchall()
        described = conn.execute("SELECT description FROM sources WHERE name = 'team_docs'").fetchone()[0]
    assert acl == [("acme", ["bob"], [])]
    assert str(root) not in described  # no server path leaves through the API
    for path in root.iterdir():
        path.unlink()
    emptied = h2.materialize("key:folders/team_docs")
    assert emptied.success
    with h2.connect() as conn:
        assert conn.execute("SELECT count(*) FROM documents WHERE source = 'team_docs'").fetchone()[0] == 0
        (root / "again.md").write_text("# Again\n")
    h2.materialize("key:folders/team_docs")
    root_gone = root.rename(root.with_name("docs-unmounted"))
    failed = h2.materialize("key:folders/team_docs", raise_on_error=False)
    assert not failed.success
    with h2.connect() as conn:
        assert conn.execute("SELECT doc_id FROM documents WHERE source = 'team_docs'").fetchall() == [
            ("team_docs:again.md",)
        ]
    root_gone.rename(root)


def test_a_refused_folder_fails_its_runs_and_changes_nothing(
    folder, db_url: str, mirror: Mirror, small_specs, tmp_path: Path
):
    h, root = folder
    h.materialize("key:folders/team_docs")
    error = "folders.yaml:3: folders[0].tenant: folder team_docs is not published: say who sees these documents"
    refused = FolderSpec(name="team_docs", path=root, error=error)  # what load_folders makes of a bad entry
    h2 = harness(db_url, mirror, tmp_path / "work2", small_specs, folders=[refused])
    graph = h2.defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey(["folders", "team_docs"])).code_version != (
        h.defs.resolve_asset_graph().get(dg.AssetKey(["folders", "team_docs"])).code_version
    )  # automation runs it, and the run says why
    (root / "new.md").write_text("# New\n")
    failed = h2.materialize("key:folders/team_docs", raise_on_error=False)
    assert not failed.success
    [failure] = [e for e in failed.all_events if e.event_type_value == "STEP_FAILURE"]
    assert error in str(failure.event_specific_data.error)
    with h2.connect() as conn:
        rows = conn.execute("SELECT doc_id, tenant FROM documents WHERE source = 'team_docs' ORDER BY 1").fetchall()
        attempt = conn.execute(
            "SELECT st.state, st.error_kind, v.error_detail FROM source_status st "
            "JOIN source_versions v ON v.id = st.attempt_id WHERE st.name = 'team_docs'"
        ).fetchone()
    assert rows == [("team_docs:a.md", "acme"), ("team_docs:b.txt", "acme")]
    assert attempt == ("failed", "config_error", error)  # recorded like any failed attempt
