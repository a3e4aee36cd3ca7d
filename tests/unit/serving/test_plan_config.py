"""Plan file validation: clear errors naming the failing field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from secrag.errors import ConfigError
from serving.plans.plans_file import QUERY_TYPES, load_plans
from serving.settings.api import default_plans_file

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
        (mutate(["default", "quotas"], {"technique": 0.5, "nonsense": 0.5}), "unknown category 'nonsense'"),
        (mutate(["default", "min_per_category"], {"technique": 20}), "more than total_chunks"),
        (mutate(["default", "surprise"], 1), "surprise"),
        (mutate(["overrides", "weather"], {}), "overrides.weather: Input should be 'default', 'mitre_id'"),
        (mutate(["overrides", "default"], {}), "overrides.default: the default plan is the top-level"),
        (mutate(["overrides", "mitre_id", "quotas"], {"technique": 2.0}), "mitre_id"),
        (mutate(["classification", "id_rules", "mitre_id"], "(unclosed"), "not a valid regex"),
        (mutate(["default", "source_boosts"], {"sigma": -1}), "boosts"),
    ],
)
def test_invalid_plans_are_clear_errors(tmp_path: Path, data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_plans(write(tmp_path, data))


SHIPPED = default_plans_file().read_text()


def line_of(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        (
            "  total_chunks: 12",
            "  total_chunks: 0",
            "default.total_chunks",
            "Input should be greater than or equal to 1",
        ),
        ("  char_budget: 16000", "  char_budget: '16000'", "default.char_budget", "Input should be a valid integer"),
        ("  candidates_multiplier: 4", "  candidates_mult: 4", "default.candidates_mult", "Extra inputs"),
        (
            "    category_boosts: {lolbin: 1.3}",
            "    category_boosts: {lolbin: 11}",
            "overrides.lolbin.category_boosts.lolbin",
            "a boost must be in (0, 10]",
        ),
        (
            "    min_per_category: {test: 2}",
            "    min_per_category: {test: 2, weather: 1}",
            "overrides.test.min_per_category.weather",
            "unknown category 'weather'",
        ),
        (
            "  forensic:\n    quotas",
            "  forensics:\n    quotas",
            "overrides.forensics",
            "Input should be 'default', 'mitre_id'",
        ),
        ("    lolbin: [lolbin,", "    lolbins: [lolbin,", "classification.keywords.lolbins", "Input should be"),
        ("  max_step: 0.05", "  max_step: 0", "tuning.max_step", "Input should be greater than 0"),
    ],
)
def test_a_bad_value_names_file_line_and_field(tmp_path: Path, old: str, new: str, field: str, message: str) -> None:
    """The message leads with `<file>:<line>: <field>:` at the line of the offending key."""
    assert old in SHIPPED
    text = SHIPPED.replace(old, new, 1)
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_plans(path)
    first = str(caught.value).split("; ")[0]
    assert first.startswith(f"{path}:{line_of(text, new)}: {field}: {message}")


def test_a_type_no_rule_selects_is_an_error(tmp_path: Path) -> None:
    text = SHIPPED.replace("    lolbin: [lolbin,", "    # lolbin: [lolbin,", 1)
    with pytest.raises(
        ConfigError, match=r":\d+: classification: no id rule or keyword selects the query types lolbin"
    ):
        load_plans(write(tmp_path, text))


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
    from serving.plans.plans_file import load_plans
    from serving.settings.api import default_plans_file

    categories = set(load_plans(default_plans_file()).categories)
    assert {spec.category for spec in default_registry().values()} <= categories
    assert "user" in categories


def test_a_short_audit_history_is_raised_to_100(tmp_path: Path) -> None:
    text = SHIPPED.replace("  history: 100", "  history: 20", 1)
    assert text != SHIPPED
    assert load_plans(write(tmp_path, text)).tuning.history == 100
