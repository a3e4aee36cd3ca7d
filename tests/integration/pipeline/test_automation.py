"""Convergence without a human: sensors observe upstreams in any order, declarative automation does the rest."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import pytest

from pipeline.assets.keys import ATTACK_SOURCE, LOOKUP_KEY, source_key
from pipeline.sources.mirror import Mirror
from pipeline.sources.registry import SourceSpec
from tests.plugins.graph import Harness, harness
from tests.plugins.mirror_changes import add_commit

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")

# Documents that name a technique the lookup knows, whose first chunk lacks the technique's name.
UNENRICHED = """
SELECT count(DISTINCT d.doc_id)
FROM documents d
JOIN mitre_techniques t ON t.id = ANY(d.techniques) AND NOT t.revoked AND NOT t.deprecated
JOIN chunks c ON c.doc_id = d.doc_id AND c.ordinal = 0
WHERE position(t.name IN c.enriched_text) = 0
"""


def _observe(h: Harness, name: str) -> None:
    """One tick of the source's sensor, its observation stored as the daemon would store it."""
    sensor = h.defs.resolve_sensor_def(f"{name}_upstream")
    result = sensor(dg.build_sensor_context(cursor=None, resources=h.resources, instance=h.instance))
    for event in result.asset_events:
        h.instance.report_runless_asset_event(event)


_CURSORS: dict[int, object] = {}  # the automation sensor's cursor per harness, kept across ticks as the daemon does


def _converge(h: Harness, max_ticks: int = 10) -> list[list[str]]:
    """Evaluate the automation conditions and run what they request until nothing is requested."""
    graph = h.defs.resolve_asset_graph()
    keys = [k for k in graph.get_all_asset_keys() if graph.get(k).is_materializable]
    runs: list[list[str]] = []
    for _ in range(max_ticks):
        cursor = _CURSORS.get(id(h))
        evaluation = dg.evaluate_automation_conditions(defs=h.defs, instance=h.instance, cursor=cursor)  # type: ignore[arg-type]
        _CURSORS[id(h)] = evaluation.cursor
        requested = sorted(k.to_user_string() for k in keys if evaluation.get_num_requested(k))
        if not requested:
            return runs
        runs.append(requested)
        result = h.materialize(" or ".join(f'key:"{k}"' for k in requested), raise_on_error=False)
        assert result.success, requested
    raise AssertionError(f"no fixed point after {max_ticks} ticks: {runs}")


@pytest.fixture
def graph(db_url: str, mirror: Mirror, tmp_path: Path, small_specs: Mapping[str, SourceSpec]) -> Harness:
    return harness(db_url, mirror, tmp_path / "work", small_specs)


def test_sources_observed_in_the_wrong_order_converge_fully_enriched(graph: Harness) -> None:
    assert _converge(graph) == []  # the automation sensor starts before anything is observed
    for name in ("mitre_car", "hijacklibs"):  # before ATT&CK: nothing may publish without technique names
        _observe(graph, name)
    assert _converge(graph) == []  # waiting for ATT&CK and its lookup
    _observe(graph, ATTACK_SOURCE)
    runs = _converge(graph)
    # One run holds ATT&CK, its lookup and the sources that wait for it; it executes them in
    # dependency order, so the other sources publish with the lookup already built.
    assert {source_key(ATTACK_SOURCE).to_user_string(), LOOKUP_KEY.to_user_string()} <= set(runs[0])
    flat = {k for run in runs for k in run}
    assert {"sources/mitre_car", "sources/hijacklibs", "embeddings/mitre_car", "embeddings/hijacklibs"} <= flat
    with graph.connect() as conn:
        assert conn.execute("SELECT count(*) FROM documents WHERE techniques <> '{}'").fetchone()[0] > 0
        assert conn.execute(UNENRICHED).fetchone()[0] == 0
        missing = conn.execute(
            "SELECT count(*) FROM chunks c "
            "WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash)"
        ).fetchone()[0]
        assert missing == 0
    assert _converge(graph) == []  # a fixed point: nothing stale is left


def test_a_changed_lookup_propagates_to_the_sources_that_name_its_techniques(
    graph: Harness, small_specs: Mapping[str, SourceSpec]
) -> None:
    _converge(graph)
    for name in (ATTACK_SOURCE, "mitre_car", "hijacklibs"):
        _observe(graph, name)
    _converge(graph)
    with graph.connect() as conn:
        technique, old_name = conn.execute(
            "SELECT t.id, t.name FROM mitre_techniques t JOIN documents d ON t.id = ANY(d.techniques) "
            "WHERE d.source = 'mitre_car' ORDER BY t.id LIMIT 1"
        ).fetchone()
    bundle_file = small_specs[ATTACK_SOURCE].paths[0]
    git_dir = str(graph.mirror.git_dir(ATTACK_SOURCE))
    raw = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{bundle_file}"], capture_output=True, check=True)
    bundle = json.loads(raw.stdout)
    renamed = f"{old_name} Renamed"
    for obj in bundle["objects"]:
        refs = obj.get("external_references") or []
        if obj.get("type") == "attack-pattern" and any(r.get("external_id") == technique for r in refs):
            obj["name"] = renamed
    add_commit(graph.mirror, ATTACK_SOURCE, {bundle_file: json.dumps(bundle).encode()})
    _observe(graph, ATTACK_SOURCE)
    runs = _converge(graph)
    assert "sources/mitre_car" in {k for run in runs for k in run}
    with graph.connect() as conn:
        assert conn.execute("SELECT name FROM mitre_techniques WHERE id = %s", [technique]).fetchone()[0] == renamed
        assert conn.execute(UNENRICHED).fetchone()[0] == 0
        assert (
            conn.execute(
                "SELECT count(*) FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                "WHERE d.source = 'mitre_car' AND %s = ANY(d.techniques) AND c.ordinal = 0 "
                "AND position(%s IN c.enriched_text) > 0",
                [technique, renamed],
            ).fetchone()[0]
            > 0
        )
