"""The code location: a checked-in snapshot of its keys, checks, sensors and schedules; it validates."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest

from pipeline.assets.groups import ASSET_GROUPS
from pipeline.assets.keys import SENTENCE_MODEL_KEY, SENTENCE_QUALITY
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


def test_the_sentence_model_is_trained_after_both_attack_sources_embeddings(tmp_path: Path):
    graph = _defs(tmp_path).resolve_asset_graph()
    node = graph.get(SENTENCE_MODEL_KEY)
    assert set(node.parent_keys) == {
        dg.AssetKey(["embeddings", "mitre_attack"]),
        dg.AssetKey(["embeddings", "mitre_attack_procedures"]),
    }
    assert dg.AssetCheckKey(SENTENCE_MODEL_KEY, SENTENCE_QUALITY) in graph.asset_check_keys
    assert node.pools == {"embedding"}  # never beside an embedding step (one CPU's worth each)
    assert "('steps', 600)" in (node.code_version or "")  # the recipe is the code version: a new one retrains


def _has_sentence_model(defs: dg.Definitions) -> bool:
    return SENTENCE_MODEL_KEY in defs.resolve_asset_graph().get_all_asset_keys()


@pytest.mark.parametrize(
    ("settings", "sources", "present"),
    [
        ({}, None, True),  # the default: training on, both ATT&CK sources enabled
        ({"sentence_training": False}, None, False),
        ({"sentence_training_steps": 3}, None, True),
        ({}, "mitre_attack_procedures", False),  # no procedure examples: nothing to train on
        ({}, "mitre_attack", False),  # no technique documents: no labels' texts
    ],
    ids=["default", "training-off", "few-steps", "without-procedures", "without-techniques"],
)
def test_the_sentence_model_needs_training_on_and_both_attack_sources(
    settings: dict[str, object], sources: str | None, present: bool
):
    specs = {name: spec for name, spec in default_registry().items() if name != sources}
    defs = build_definitions(Settings(_env_file=None, **settings), specs, [])  # type: ignore[call-arg,arg-type]
    assert _has_sentence_model(defs) is present


def test_a_disabled_attack_source_leaves_the_sentence_model_out():
    specs = {
        name: replace(spec, enabled=False) if name == "mitre_attack_procedures" else spec
        for name, spec in default_registry().items()
    }
    settings = Settings(_env_file=None)
    assert not _has_sentence_model(build_definitions(settings, specs, []))


def test_the_number_of_steps_is_the_sentence_models_code_version():
    def version(steps: int) -> str | None:
        settings = Settings(_env_file=None, sentence_training_steps=steps)  # type: ignore[call-arg]
        defs = build_definitions(settings, default_registry(), [])
        return defs.resolve_asset_graph().get(SENTENCE_MODEL_KEY).code_version

    assert version(3) != version(600)


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


def test_the_training_runs_after_every_other_ready_step(tmp_path: Path) -> None:
    """A first build is one run: Dagster takes its ready steps highest priority first, so every source's vectors
    come before the sentence model's and the map verifier's training (which would otherwise hold the
    embedding pool for its half hour while sources wait for vector search)."""
    from dagster._core.storage.tags import PRIORITY_TAG

    defs = _defs(tmp_path)
    plan_steps = defs.resolve_implicit_global_asset_job_def().graph.node_dict
    priority = {name: int(node.tags.get(PRIORITY_TAG, 0)) for name, node in plan_steps.items()}
    training = [priority.pop(step) for step in ("models__sentence_model", "models__map_verifier")]
    assert priority and max(training) < min(priority.values())


def test_every_asset_check_job_sensor_and_schedule_says_what_it_does(tmp_path: Path) -> None:
    """A data engineer reads each in the Dagster UI: none is without a description (Dagster's implicit
    `__ASSET_JOB` aside)."""
    defs = _defs(tmp_path)
    graph = defs.resolve_asset_graph()
    described = {f"asset {k.to_user_string()}": graph.get(k).description for k in graph.get_all_asset_keys()}
    described |= {f"check {k.to_user_string()}": graph.get_check_spec(k).description for k in graph.asset_check_keys}
    described |= {f"job {j.name}": j.description for j in defs.resolve_all_job_defs() if not j.name.startswith("__")}
    described |= {f"sensor {s.name}": s.description for s in defs.sensors or []}
    described |= {f"schedule {s.name}": s.description for s in defs.schedules or []}
    assert any(name.startswith("job refresh_") for name in described)
    assert any(name.startswith("schedule ") for name in described)
    assert [name for name, text in described.items() if not (text or "").strip()] == []


def test_every_asset_group_is_described_in_the_code_locations_metadata(tmp_path: Path) -> None:
    """Dagster has no description of a group: the code location's metadata holds a table of every group
    (pipeline/assets/groups.py), the Dagster UI's code location page shows it."""
    defs = _defs(tmp_path)
    graph = defs.resolve_asset_graph()
    groups = {graph.get(k).group_name for k in graph.get_all_asset_keys()}
    table = defs.metadata["asset_groups"].value
    assert {"technique", "detection", "user_folders", "lookups"} <= groups
    for group in groups:
        assert f"| `{group}` | " in table
        assert len(ASSET_GROUPS[group]) > 40
