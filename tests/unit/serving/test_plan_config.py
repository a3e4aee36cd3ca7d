"""Plan file validation: clear errors naming the failing field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from secrag.errors import ConfigError
from serving.plans import QUERY_TYPES, default_plans_file, load_plans

RAW = yaml.safe_load(default_plans_file().read_text())


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "plans.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_shipped_plans_are_valid_for_every_query_type() -> None:
    config = load_plans(default_plans_file())
    for query_type in QUERY_TYPES:
        plan = config.resolve(query_type)
        assert abs(sum(plan.quotas.values()) - 1) < 0.011


def mutate(path: list[str], value: object) -> dict:
    import copy

    data = copy.deepcopy(RAW)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    "data, message",
    [
        (mutate(["default", "quotas"], {"technique": 0.5, "detection": 0.2}), "sum to 1"),
        (mutate(["default", "total_chunks"], 0), "total_chunks"),
        (mutate(["default", "quotas"], {"technique": 0.5, "nonsense": 0.5}), "unknown categories nonsense"),
        (mutate(["default", "min_per_category"], {"technique": 20}), "more than total_chunks"),
        (mutate(["default", "surprise"], 1), "surprise"),
        (mutate(["overrides", "weather"], {}), "unknown query types: weather"),
        (mutate(["overrides", "mitre_id", "quotas"], {"technique": 2.0}), "mitre_id"),
        (mutate(["classification", "id_rules", "mitre_id"], "(unclosed"), "not a valid regex"),
        (mutate(["default", "source_boosts"], {"sigma": -1}), "boosts"),
    ],
)
def test_invalid_plans_are_clear_errors(tmp_path: Path, data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_plans(write(tmp_path, data))


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_plans(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_plans(write(tmp_path, "a: [unclosed"))
    with pytest.raises(ConfigError, match="mapping"):
        load_plans(write(tmp_path, "- 1\n- 2\n"))


def test_every_registry_category_is_a_plan_category() -> None:
    """The registry says which source is in which category; plans.yaml only names the categories."""
    from pipeline.sources.registry import default_registry
    from serving.plans import default_plans_file, load_plans

    categories = set(load_plans(default_plans_file()).categories)
    assert {spec.category for spec in default_registry().values()} <= categories
    assert "user" in categories
