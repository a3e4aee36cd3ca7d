"""The code location: a checked-in snapshot of its keys, checks, sensors and schedules; it validates."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from pipeline.definitions import build_definitions
from pipeline.folders import FolderSpec
from pipeline.sources.registry import default_registry
from secrag.errors import ConfigError
from secrag.settings import REPO_ROOT, Settings

EXPECTED = Path(__file__).with_name("expected_definitions.txt")
pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")


def _defs(tmp_path: Path) -> dg.Definitions:
    folder = FolderSpec(name="team_docs", path=tmp_path, tenant="acme")
    return build_definitions(Settings(_env_file=None), default_registry(), [folder])


def describe(defs: dg.Definitions) -> list[str]:
    graph = defs.resolve_asset_graph()
    lines = []
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        kind = "source" if node.is_external else "asset"
        deps = ",".join(sorted(p.to_user_string() for p in node.parent_keys))
        lines.append(f"{kind} {key.to_user_string()} group={node.group_name} deps=[{deps}]")
    for check in sorted(graph.asset_check_keys, key=lambda c: (c.asset_key.to_user_string(), c.name)):
        lines.append(f"check {check.asset_key.to_user_string()}:{check.name}")
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        condition = graph.get(key).automation_condition
        if condition is not None:
            lines.append(f"automation {key.to_user_string()}: {condition.get_label() or type(condition).__name__}")
    lines += sorted(f"sensor {s.name}" for s in defs.sensors or [])
    lines += sorted(f"job {j.name}" for j in defs.jobs or [])
    lines += sorted(f"schedule {s.name} {s.cron_schedule}" for s in defs.schedules or [])
    return lines


def test_snapshot_of_keys_checks_sensors_and_schedules(tmp_path: Path):
    actual = describe(_defs(tmp_path))
    if os.environ.get("SECRAG_UPDATE_SNAPSHOTS") == "1":
        EXPECTED.write_text("\n".join(actual) + "\n", encoding="utf-8")
    assert actual == EXPECTED.read_text(encoding="utf-8").splitlines()


def test_every_source_has_the_same_shape(tmp_path: Path):
    graph = _defs(tmp_path).resolve_asset_graph()
    for name, spec in default_registry().items():
        node = graph.get(dg.AssetKey(["sources", name]))
        assert node.code_version == spec.parser_version
        assert {"python", "postgres"} <= set(node.kinds)
        embedding = graph.get(dg.AssetKey(["embeddings", name]))
        assert embedding.code_version.startswith("all-MiniLM-L6-v2-int8|chunker ")  # the default model
        assert embedding.pools == {"embedding"}  # one embedding step at a time (dagster.yaml)


def test_a_model_not_in_the_registry_fails_the_load():
    with pytest.raises(ConfigError, match="not in the model registry"):
        build_definitions(Settings(_env_file=None, embedding_model="bert-huge"), default_registry(), [])


def test_dagster_validates_the_code_location_from_the_repository_root():
    """Dagster's own CLI works from the root with no DAGSTER_HOME and no secrag variable: the root
    dagster.yaml is a temporary instance's configuration, the deployments' is deploy/dagster.yaml."""
    dagster = Path(sys.executable).with_name("dagster")
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME" and not k.startswith("SECRAG_")}
    before = set(REPO_ROOT.iterdir())
    proc = subprocess.run(
        [str(dagster), "definitions", "validate", "-m", "pipeline.definitions"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Validation successful" in proc.stdout + proc.stderr
    assert set(REPO_ROOT.iterdir()) == before  # the temporary instance is gone
