"""Configuration files: hardened YAML, pydantic validation, errors naming file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field, field_validator

from secrag.errors import ConfigError
from secrag.files.config_files import MAX_BYTES, ConfigModel, FieldError, field_path, load_model


class Step(ConfigModel):
    name: str
    k: int = Field(default=10, gt=0)


class Plan(ConfigModel):
    name: str
    steps: list[Step]


class Config(ConfigModel):
    plans: list[Plan] = Field(default_factory=list)
    weights: dict[str, float] = Field(default_factory=dict)

    @field_validator("weights")
    @classmethod
    def _positive(cls, weights: dict[str, float]) -> dict[str, float]:
        for name, weight in weights.items():
            if weight <= 0:
                raise FieldError((name,), "must be positive")
        return weights


GOOD = """\
plans:
  - name: first
    steps:
      - {name: a, k: 3}
  - name: second
    steps:
      - name: b
        k: 5
      - name: c
weights:
  sigma: 1.5
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error(path: Path, model: type[ConfigModel] = Config) -> str:
    with pytest.raises(ConfigError) as caught:
        load_model(path, model)
    return str(caught.value)


def test_a_valid_file_loads(tmp_path: Path) -> None:
    config = load_model(write(tmp_path, GOOD), Config)
    assert [s.k for s in config.plans[1].steps] == [5, 10]
    assert config.weights == {"sigma": 1.5}


def test_an_empty_file_is_an_empty_mapping(tmp_path: Path) -> None:
    assert load_model(write(tmp_path, "# nothing yet\n"), Config) == Config()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("        k: 5", "        k: 0", ":8: plans[1].steps[0].k: Input should be greater than 0"),
        ("        k: 5", "        k: '5'", ":8: plans[1].steps[0].k: Input should be a valid integer"),
        ("{name: a, k: 3}", "{name: a, k: 3, x: 1}", ":4: plans[0].steps[0].x: Extra inputs are not permitted"),
        ("      - name: c", "      - kk: c", ":9: plans[1].steps[1].name: Field required"),  # the item's line
        ("  - name: first", "  - nom: first", ":2: plans[0].name: Field required"),
        ("  sigma: 1.5", "  sigma: -1", ":11: weights.sigma: must be positive"),  # a validator's FieldError
        ("weights:", "weighs:", ":10: weighs: Extra inputs are not permitted"),
    ],
)
def test_errors_name_file_line_and_field(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    assert error(path).startswith(f"{path}{expected}")  # a renamed key is also an extra one


def test_every_error_is_named_up_to_a_limit(tmp_path: Path) -> None:
    text = "plans:\n" + "".join(f"  - {{name: p{i}, steps: [{{name: s, k: 0}}]}}\n" for i in range(8))
    message = error(write(tmp_path, text))
    assert message.count("Input should be greater than 0") == 5
    assert message.endswith("(and 3 more)")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plans: [unclosed\n", r":2: not valid YAML"),
        ("- 1\n- 2\n", r":1: expected a mapping, found list"),
        ("a: 1\n---\nb: 2\n", r":2: not valid YAML: but found another document"),
        ("a: !!python/object:os.system {}\n", r":1: not valid YAML"),  # no arbitrary tags
        ("a: &x [1]\n" + "".join(f"b{i}: *x\n" for i in range(101)), "more than 100 aliases"),
        ("a: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32 levels"),
    ],
)
def test_unsafe_or_malformed_yaml_is_refused_with_its_line(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=f"^{path}.*{expected}"):
        load_model(path, Config)


def test_oversized_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="limit"):
        load_model(write(tmp_path, "#" * (MAX_BYTES + 1)), Config)
    with pytest.raises(ConfigError, match="cannot read"):
        load_model(tmp_path / "absent.yaml", Config)
    (tmp_path / "latin1.yaml").write_bytes(b"a: \xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_model(tmp_path / "latin1.yaml", Config)


def test_field_path() -> None:
    assert field_path(("plans", 3, "steps", 0, "k")) == "plans[3].steps[0].k"
    assert field_path(("overrides", "weather", "[key]")) == "overrides.weather"
    assert field_path(()) == ""
