"""Sensors through their cursor: an observation per new upstream version, none when unchanged, failed ticks."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import dagster as dg
import pytest

from pipeline.assets.keys import FRESHNESS, upstream_key
from pipeline.assets.sources import REQUESTED_VERSION_TAG
from pipeline.folders import FolderSpec
from pipeline.probe_cursor import decode_cursor, encode_cursor
from pipeline.resources import UpstreamResource
from pipeline.sources.interface import Upstream
from pipeline.sources.mirror import Mirror
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.upstream import UpstreamConfig
from secrag.errors import FetchError
from secrag.net.rate_limits import RESERVE, RateLimit
from tests.plugins.graph import Harness, harness
from tests.plugins.mirror_changes import add_commit
from tests.plugins.upstream import FAST_RETRIES, LoopbackPolicy, LoopbackServer, Reply, serve_mirror

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
    assert decode_cursor("mitre_car", result.cursor).version == head
    observed, freshness = result.asset_events
    assert observed.asset_key == upstream_key("mitre_car") and observed.tags["dagster/data_version"] == head
    # Nothing is published yet: the freshness check fails, reported without a run.
    assert (freshness.check_name, freshness.passed, freshness.severity) == (
        FRESHNESS,
        False,
        dg.AssetCheckSeverity.ERROR,
    )
    with graph.connect() as conn:
        row = conn.execute("SELECT last_seen_version, poll_interval FROM sources WHERE name = 'mitre_car'").fetchone()
    description = graph.defs.resolve_sensor_def("mitre_car_upstream").description or ""
    assert row[0] == head and f"every {row[1]}s" in description  # the interval the probes keep between pokes


def _report(h: Harness, result: dg.SensorResult) -> dg.SensorResult:
    for event in result.asset_events:  # what the sensor daemon does with them
        h.instance.report_runless_asset_event(event)
    return result


def test_freshness_is_reported_when_it_changes_and_a_stalled_source_fails_it(graph: Harness):
    first = _report(graph, tick(graph, "mitre_car_upstream", None))
    graph.materialize("key:sources/mitre_car")  # publishes; its run evaluates the check: passed
    again = tick(graph, "mitre_car_upstream", first.cursor)
    assert not again.run_requests and again.skip_reason is not None
    assert "unchanged" in again.skip_reason.skip_message
    assert again.asset_events == []  # neither an observation nor the same verdict again
    new = add_commit(graph.mirror, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    seen = _report(graph, tick(graph, "mitre_car_upstream", again.cursor))
    assert [e.asset_key for e in seen.asset_events] == [upstream_key("mitre_car")]  # just seen: still fresh
    with graph.connect() as conn:  # the refresh stalls: the new version waits past the window
        conn.execute("UPDATE sources SET seen_since = now() - interval '1 hour' WHERE name = 'mitre_car'")
    stalled = tick(graph, "mitre_car_upstream", seen.cursor)
    [verdict] = stalled.asset_events
    assert verdict.check_name == FRESHNESS and not verdict.passed
    assert "newer upstream version has waited" in verdict.metadata["reason"].value
    assert decode_cursor("mitre_car", stalled.cursor).version == new


def test_new_commit_moves_the_cursor_once(graph: Harness):
    cursor = tick(graph, "mitre_car_upstream", None).cursor
    new = add_commit(graph.mirror, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    first = tick(graph, "mitre_car_upstream", cursor)
    assert decode_cursor("mitre_car", first.cursor).version == new
    assert [e.tags["dagster/data_version"] for e in first.asset_events if e.asset_key == upstream_key("mitre_car")] == [
        new
    ]
    again = tick(graph, "mitre_car_upstream", first.cursor)
    assert again.skip_reason is not None and decode_cursor("mitre_car", again.cursor).version == new


def test_a_cursor_of_before_still_reads(graph: Harness):
    head = graph.mirror.head("mitre_car")
    assert tick(graph, "mitre_car_upstream", head).skip_reason is not None  # the bare version: unchanged


def _attempts(h: Harness) -> list[tuple]:
    with h.connect() as conn:
        return conn.execute(
            "SELECT status, phase, error_kind FROM source_versions WHERE source = 'mitre_car' ORDER BY id"
        ).fetchall()


def test_probe_failure_is_a_failed_tick_recorded_once_and_cleared_by_the_next_answer(graph: Harness, tmp_path: Path):
    broken = {
        **graph.resources,
        "upstream": UpstreamResource(repo_overrides={"mitre_car": (tmp_path / "gone.git").as_uri()}, probe_timeout=5),
    }
    published = graph.materialize("key:sources/mitre_car")
    assert published.success
    cursor = tick(graph, "mitre_car_upstream", None).cursor
    for _ in range(2):
        with pytest.raises(FetchError):
            tick(graph, "mitre_car_upstream", cursor, broken)
    attempts = _attempts(graph)
    assert attempts[-1] == ("failed", "probe", "probe_failed") and attempts.count(attempts[-1]) == 1
    with graph.connect() as conn:
        state = conn.execute("SELECT state FROM source_status WHERE name = 'mitre_car'").fetchone()[0]
    assert state == "failed"
    tick(graph, "mitre_car_upstream", cursor)
    assert _attempts(graph)[-1] == ("unchanged", "probe", None)
    with graph.connect() as conn:
        assert conn.execute("SELECT state FROM source_status WHERE name = 'mitre_car'").fetchone()[0] == "ok"


def test_a_rate_limit_at_its_reserve_defers_the_probe(graph: Harness, tmp_path: Path):
    seen = decode_cursor("mitre_car", tick(graph, "mitre_car_upstream", None).cursor)
    reset = time.time() + 600
    low = encode_cursor(dataclasses.replace(seen, rate=RateLimit(60, RESERVE, reset)))
    broken = {
        **graph.resources,
        "upstream": UpstreamResource(repo_overrides={"mitre_car": (tmp_path / "gone.git").as_uri()}, probe_timeout=5),
    }
    deferred = tick(graph, "mitre_car_upstream", low, broken)  # the broken upstream is not even asked
    assert (
        deferred.skip_reason is not None and "reserve" in deferred.skip_reason.skip_message and deferred.cursor is None
    )
    past = encode_cursor(dataclasses.replace(seen, rate=RateLimit(60, RESERVE, time.time() - 1)))
    assert tick(graph, "mitre_car_upstream", past).skip_reason is not None  # the window has reset: probed


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
    assert not h2.materialize("key:folders/team_docs", raise_on_error=False).success  # refused until forced
    forced = {"ops": {"folders__team_docs": {"config": {"force": True}}}}
    emptied = h2.materialize("key:folders/team_docs", run_config=forced)
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


class LoopbackUpstream(UpstreamResource):
    """The online upstream on the mirror's git repositories and a loopback releases API (tests only)."""

    repos: dict[str, str] = {}
    api_base: str = ""

    def upstream(self) -> Upstream:
        cfg = UpstreamConfig(policy=LoopbackPolicy(), limits=FAST_RETRIES, probe_timeout=10.0)
        return OnlineUpstream(cfg.with_mirror(self.repos, {}, self.api_base))


def test_release_sensor_probes_conditionally_and_backs_off_a_used_up_rate_limit(
    graph: Harness, http_server: LoopbackServer
):
    api_base, _ = serve_mirror(http_server, graph.mirror)
    resources = {**graph.resources, "upstream": LoopbackUpstream(repos=dict(graph.mirror.repos), api_base=api_base)}
    api = "/api/repos/mitre-attack/attack-stix-data/releases/latest"
    first = tick(graph, "mitre_attack_upstream", None, resources)
    again = tick(graph, "mitre_attack_upstream", first.cursor, resources)
    assert "304 Not Modified" in again.skip_reason.skip_message
    assert http_server.statuses(api) == [200, 304]
    reset = int(time.time()) + 900
    used_up = {"x-ratelimit-limit": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    http_server.route(api, Reply(403, b'{"message": "API rate limit exceeded"}', used_up))
    refused = tick(graph, "mitre_attack_upstream", again.cursor, resources)  # a back-off, not a failed tick
    assert "rate limit is used up" in refused.skip_reason.skip_message
    rate = decode_cursor("mitre_attack", refused.cursor).rate
    assert rate is not None and (rate.remaining, rate.reset_at) == (0, reset)
    with graph.connect() as conn:
        recorded = conn.execute(
            "SELECT status, phase, error_class FROM source_versions WHERE source = 'mitre_attack' ORDER BY id DESC"
        ).fetchone()
    assert recorded == ("failed", "probe", "FetchRateLimited")
    deferred = tick(graph, "mitre_attack_upstream", refused.cursor, resources)
    assert "reserve" in deferred.skip_reason.skip_message
    assert len(http_server.hits(api)) == 3  # nothing asked while waiting for the reset


def test_a_published_source_that_moves_is_refreshed_at_once_with_its_stages(graph: Harness):
    first = tick(graph, "mitre_car_upstream", None)
    assert not first.run_requests  # a first build is the automation's
    graph.materialize("key:sources/mitre_car")
    new = add_commit(graph.mirror, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    moved = tick(graph, "mitre_car_upstream", first.cursor)
    [request] = moved.run_requests
    assert request.tags == {"secrag/source": "mitre_car", REQUESTED_VERSION_TAG: new}
    assert {k.to_user_string() for k in request.asset_selection} == {"sources/mitre_car", "embeddings/mitre_car"}
    assert not tick(graph, "mitre_car_upstream", moved.cursor).run_requests
    result = graph.materialize("key:sources/mitre_car", tags=request.tags)
    meta = result.asset_materializations_for_node("sources__mitre_car")[0].metadata
    assert meta["version"].value == new and meta["removed"].value == 1
    stages = [meta[f"{s}_at"].value for s in ("seen", "run_queued", "run_started", "published")]
    assert stages == sorted(stages)  # first seen by the probe, then queued, started, published
    assert {"seconds_seen_to_run_queued", "seconds_run_started_to_published"} <= set(meta)
