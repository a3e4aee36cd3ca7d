"""ATT&CK's release index through the release sensor: a real Dagster instance, the small snapshot's ATT&CK on a
git mirror, its releases API over loopback HTTP. index.json gaining 19.0 requests a refresh of the ATT&CK
source, and the run publishes the versioned bundle the index names; an unchanged index requests nothing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import pytest

from pipeline.assets.keys import upstream_key
from pipeline.assets.sources import REQUESTED_VERSION_TAG
from pipeline.definitions import build_definitions
from pipeline.probe_cursor import decode_cursor
from pipeline.resources import EmbedderResource, StoreResource, UpstreamResource
from pipeline.sensors import source_targets
from pipeline.sources.interface import Upstream
from pipeline.sources.mirror import Mirror
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.registry import SourceSpec
from pipeline.sources.upstream import UpstreamConfig
from pipeline.sources.version_index import versioned
from secrag.settings import get_settings
from tests.plugins.attack_spec_v4 import next_index
from tests.plugins.graph import Harness
from tests.plugins.mirror_changes import add_commit
from tests.plugins.upstream import FAST_RETRIES, SNAPSHOT, LoopbackPolicy, LoopbackServer, serve_mirror

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")

SOURCE = "mitre_attack"
SENSOR = f"{SOURCE}_upstream"
STORED_INDEX = SNAPSHOT / "mitre_attack" / "attack-stix-data" / "index.json"


class LoopbackUpstream(UpstreamResource):
    """The online upstream on the mirror's git repositories and its releases API over loopback HTTP."""

    repos: dict[str, str] = {}
    api_base: str = ""

    def upstream(self) -> Upstream:
        cfg = UpstreamConfig(policy=LoopbackPolicy(), limits=FAST_RETRIES, probe_timeout=10.0, fetch_timeout=60.0)
        return OnlineUpstream(cfg.with_mirror(self.repos, {}, self.api_base))


def _show(mirror: Mirror, rel: str) -> bytes:
    git_dir = str(mirror.git_dir(SOURCE))
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{rel}"], capture_output=True, check=True).stdout


@pytest.fixture
def graph(
    db_url: str, mirror: Mirror, http_server: LoopbackServer, tmp_path: Path, small_specs: Mapping[str, SourceSpec]
) -> Harness:
    """The small graph; ATT&CK's branch as upstream lays it out: index.json (the stored one, 18.1) at the root
    and the versioned bundle it names beside the unversioned one."""
    bundle = small_specs[SOURCE].paths[0]
    add_commit(
        mirror, SOURCE, {"index.json": STORED_INDEX.read_bytes(), versioned(bundle, "18.1"): _show(mirror, bundle)}
    )
    api_base, _ = serve_mirror(http_server, mirror)
    resources = {
        "store": StoreResource(database_url=db_url, work_dir=str(tmp_path / "work")),
        "upstream": LoopbackUpstream(repos=dict(mirror.repos), api_base=api_base),
        "embedder": EmbedderResource(),
    }
    defs = build_definitions(get_settings(), small_specs, [], resources=resources)
    return Harness(db_url, mirror, defs, resources, dg.DagsterInstance.ephemeral())


def _tick(h: Harness, cursor: str | None) -> dg.SensorResult:
    sensor = h.defs.resolve_sensor_def(SENSOR)
    return sensor(dg.build_sensor_context(cursor=cursor, resources=h.resources, instance=h.instance))


def _observed(result: dg.SensorResult) -> list[str]:
    return [
        e.tags["dagster/data_version"]
        for e in result.asset_events
        if getattr(e, "asset_key", None) == upstream_key(SOURCE)
    ]


def _published(h: Harness) -> tuple[str, dict[str, str]]:
    with h.connect() as conn:
        [version] = conn.execute("SELECT current_version FROM sources WHERE name = %s", [SOURCE]).fetchone()
        titles = conn.execute("SELECT doc_id, title FROM documents WHERE source = %s", [SOURCE]).fetchall()
    return version, dict(titles)


def test_index_json_gaining_19_0_requests_a_refresh_that_publishes_the_bundle_it_names(
    graph: Harness, small_specs: Mapping[str, SourceSpec]
) -> None:
    first = _tick(graph, None)
    assert decode_cursor(SOURCE, first.cursor).version == "v18.1" and _observed(first) == ["v18.1"]
    assert not first.run_requests  # a first build is the automation sensor's
    assert graph.materialize(f"key:sources/{SOURCE}").success
    version, before = _published(graph)
    assert version == "v18.1" and before

    quiet = _tick(graph, first.cursor)  # the same head: index.json is not read again
    assert not quiet.run_requests and "unchanged at v18.1" in quiet.skip_reason.skip_message
    add_commit(graph.mirror, SOURCE, {"USAGE.md": b"a commit that is no release\n"})
    moved = _tick(graph, quiet.cursor)  # the head moved, index.json still lists 18.1 first
    assert not moved.run_requests and "unchanged at v18.1" in moved.skip_reason.skip_message
    assert decode_cursor(SOURCE, moved.cursor).commit == graph.mirror.head(SOURCE)

    # 19.0 in index.json, its bundle beside the old one (which stays as it was), no new release tag named 19.0.
    bundle = small_specs[SOURCE].paths[0]
    data = json.loads(_show(graph.mirror, bundle))
    technique = next(o for o in data["objects"] if o.get("type") == "attack-pattern" and not o.get("revoked"))
    technique["name"] += " (19.0)"
    external_id = next(r["external_id"] for r in technique["external_references"] if r.get("external_id"))
    add_commit(
        graph.mirror,
        SOURCE,
        {"index.json": next_index(STORED_INDEX.read_bytes()), versioned(bundle, "19.0"): json.dumps(data).encode()},
    )
    noticed = _tick(graph, moved.cursor)
    assert _observed(noticed) == ["v19.0"]
    [run] = noticed.run_requests
    assert set(run.asset_selection or ()) == set(source_targets(SOURCE))
    assert run.tags[REQUESTED_VERSION_TAG] == "v19.0"

    # The run, as the sensor requested it (its ATT&CK source step): the 19.0 bundle index.json names is published.
    assert graph.materialize(f"key:sources/{SOURCE}", tags=run.tags).success
    version, after = _published(graph)
    assert version == "v19.0"
    assert (
        after[f"{SOURCE}:{external_id}"].endswith(" (19.0)")
        and before[f"{SOURCE}:{external_id}"] != after[f"{SOURCE}:{external_id}"]
    )
    assert not _tick(graph, noticed.cursor).run_requests  # seen once, requested once
