"""ATT&CK's next release without what spec v4 removes, end to end: the stored v18.1 published through real Dagster
from a mirror served over loopback HTTP, then a release whose bundles lack every deprecated field and object and
whose index.json lists 19.0: the release sensor notices it, it publishes the same technique documents, detection
strategies, analytics (with their log sources) and technique lookup, and its materialization names what is gone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from pipeline.assets.keys import LOOKUP_KEY, SENTENCE_MODEL_KEY, embeddings_key, source_key, upstream_key
from pipeline.definitions import build_definitions
from pipeline.probe_cursor import decode_cursor
from pipeline.resources import EmbedderResource, StoreResource, UpstreamResource
from pipeline.sources.interface import Upstream
from pipeline.sources.mirror import Mirror
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.parsers.stix.deprecated import DEPRECATED, NOTE
from pipeline.sources.registry import default_registry
from pipeline.sources.upstream import UpstreamConfig
from secrag.settings import get_settings
from tests.plugins.attack_spec_v4 import BUNDLES, NEXT_VERSION, newest_version, next_index, strip_bundle
from tests.plugins.graph import Harness
from tests.plugins.mirror_changes import add_commit
from tests.plugins.upstream import FAST_RETRIES, SNAPSHOT, LoopbackPolicy, LoopbackServer, serve_mirror

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster"),
]

SOURCES = ("mitre_attack", "mitre_attack_detections")
INDEX = "attack-stix-data/index.json"  # where the snapshot keeps upstream's index.json (a second repository)
SELECTION = "key:sources/mitre_attack or key:sources/mitre_attack_detections or key:lookups/mitre_techniques"
# Techniques whose analytics' log sources coverage answers (credential dumping, PowerShell, a sub-technique of
# scheduled tasks, a cloud one, an ICS one).
SAMPLE = ("T1003.001", "T1059.001", "T1053.005", "T1078.004", "T0855")


class LoopbackUpstream(UpstreamResource):
    """The online upstream on the mirror's git repositories and its releases API over loopback HTTP."""

    repos: dict[str, str] = {}
    api_base: str = ""

    def upstream(self) -> Upstream:
        cfg = UpstreamConfig(policy=LoopbackPolicy(), limits=FAST_RETRIES, probe_timeout=10.0, fetch_timeout=120.0)
        return OnlineUpstream(cfg.with_mirror(self.repos, {}, self.api_base))


@pytest.fixture
def graph(db_url: str, mirror_factory: Callable[..., Mirror], http_server: LoopbackServer, tmp_path: Path):
    """The ATT&CK sources of the real snapshot, their releases API served over loopback HTTP."""
    mirror = mirror_factory(list(SOURCES), fresh=True)
    api_base, _ = serve_mirror(http_server, mirror)
    specs = {name: spec for name, spec in default_registry().items() if name in SOURCES}
    resources = {
        "store": StoreResource(database_url=db_url, work_dir=str(tmp_path / "work")),
        "upstream": LoopbackUpstream(repos=dict(mirror.repos), api_base=api_base),
        "embedder": EmbedderResource(),
    }
    defs = build_definitions(get_settings(), specs, [], resources=resources)
    return Harness(db_url, mirror, defs, resources, dg.DagsterInstance.ephemeral())


def _metadata(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict[str, Any]:
    [event] = result.asset_materializations_for_node(key.to_python_identifier())
    return {k: v.value for k, v in event.metadata.items()}


def _served(h: Harness) -> dict[str, Any]:
    """What the store answers from: documents by kind, their text and metadata, log sources, the lookup."""
    with h.connect() as conn:
        docs = conn.execute(
            "SELECT doc_id, source, title, body, techniques, metadata FROM documents WHERE source = ANY(%s) "
            "ORDER BY doc_id",
            [list(SOURCES)],
        ).fetchall()
        lookup = conn.execute(
            "SELECT id, name, full_name, tactics, platforms, parent, revoked, deprecated, replaced_by, domain, version "
            "FROM mitre_techniques ORDER BY id, domain"
        ).fetchall()
    kinds: dict[str, int] = {}
    for _, source, *_, metadata in docs:
        kinds[f"{source}:{metadata.get('kind')}"] = kinds.get(f"{source}:{metadata.get('kind')}", 0) + 1
    log_sources = {
        tid: sorted(
            {
                s["name"] + " " + s.get("channel", "")
                for *_, techniques, m in docs
                if tid in techniques
                for s in m.get("log_sources", ())
            }
        )
        for tid in SAMPLE
    }
    return {
        "kinds": kinds,
        "documents": {d[0]: d[2:] for d in docs},
        "log_sources": log_sources,
        "lookup": [tuple(str(v) for v in row[:-1]) for row in lookup],  # each technique but its release
        "lookup_versions": sorted({row[-1] for row in lookup}),
    }


def _tick(h: Harness, cursor: str | None) -> dg.SensorResult:
    sensor = h.defs.resolve_sensor_def("mitre_attack_upstream")
    return sensor(dg.build_sensor_context(cursor=cursor, resources=h.resources, instance=h.instance))


def test_a_release_without_the_deprecated_fields_publishes_the_same_answers_and_names_what_is_gone(graph: Harness):
    first = _tick(graph, None)
    old = decode_cursor("mitre_attack", first.cursor).version
    result = graph.materialize(SELECTION)
    assert result.success
    before = _served(graph)
    assert _metadata(result, source_key("mitre_attack"))[NOTE] == [
        "x_mitre_data_sources",
        "x_mitre_permissions_required",
        "x_mitre_system_requirements",
        "x_mitre_defense_bypassed",
        "x-mitre-data-component detects",
    ]

    # The next release: the stored bundles stripped, 19.0 first in index.json.
    changes = {rel: strip_bundle((SNAPSHOT / "mitre_attack" / rel).read_bytes()) for rel in BUNDLES}
    changes[INDEX] = next_index((SNAPSHOT / "mitre_attack" / INDEX).read_bytes())
    assert newest_version(changes[INDEX]) == NEXT_VERSION
    add_commit(graph.mirror, "mitre_attack", changes, f"ATT&CK v{NEXT_VERSION}")

    noticed = _tick(graph, first.cursor)
    new = decode_cursor("mitre_attack", noticed.cursor).version
    assert new != old
    observed = [e for e in noticed.asset_events if getattr(e, "asset_key", None) == upstream_key("mitre_attack")]
    assert [e.tags["dagster/data_version"] for e in observed] == [new]

    result = graph.materialize(SELECTION)
    assert result.success
    after = _served(graph)
    for source in SOURCES:
        meta = _metadata(result, source_key(source))
        assert meta["version"] == new
        assert meta[NOTE] == list(DEPRECATED)  # every field and object spec v4 removes, named
    assert after["kinds"] == before["kinds"]
    assert (
        before["kinds"]["mitre_attack:technique"] > 150 and before["kinds"]["mitre_attack_detections:analytic"] > 1700
    )
    assert after["log_sources"] == before["log_sources"] and all(before["log_sources"].values())
    assert after["documents"] == before["documents"]
    assert after["lookup"] == before["lookup"] and len(before["lookup"]) > 800
    assert (before["lookup_versions"], after["lookup_versions"]) == ([old], [new])


def test_the_sentence_model_depends_on_attack_and_goes_stale_with_it() -> None:
    """Its dependencies are the ATT&CK sources' embeddings, each downstream of its upstream's observation."""
    defs = build_definitions(get_settings(), default_registry(), [], resources={})
    graph = defs.resolve_asset_graph()
    model = graph.get(SENTENCE_MODEL_KEY)
    assert {embeddings_key("mitre_attack"), embeddings_key("mitre_attack_procedures")} <= model.parent_keys
    assert model.automation_condition is not None
    assert source_key("mitre_attack") in graph.get(embeddings_key("mitre_attack")).parent_keys
    assert upstream_key("mitre_attack") in graph.get(source_key("mitre_attack")).parent_keys
    assert LOOKUP_KEY in graph.get(source_key("mitre_attack_detections")).parent_keys
