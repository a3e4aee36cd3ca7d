"""The one thresholds model: each kind's class names and range checked by one validator, `default` as the
fallback, and rows checked one by one (the store's tuned values)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from serving.contract.thresholds import ModeThresholds, ShapeThresholds, Thresholds, TypeThresholds


def test_a_class_falls_back_to_default() -> None:
    shapes = ShapeThresholds({"default": 0.02, "cve": 0.13})
    assert (shapes.of("cve"), shapes.of("uuid")) == (0.13, 0.02)
    assert ModeThresholds({"hybrid": 0.66}).of("fts") is None  # modes take no default: not judged


@pytest.mark.parametrize(
    ("kind", "rows", "message"),
    [
        (ShapeThresholds, {"prose": 0.1}, "unknown query shape 'prose'"),
        (ShapeThresholds, {"default": 1.5}, "a threshold must be in [-1.0, 1.0], not 1.5"),
        (ModeThresholds, {"semantic": 0.5}, "unknown mode 'semantic'"),
        (TypeThresholds, {"detection": -0.1}, "a threshold must be in [0.0, 1.0], not -0.1"),
        (TypeThresholds, {"weather": 0.1}, "unknown query type 'weather'"),
    ],
)
def test_one_validator_checks_names_and_range(kind: type[Thresholds], rows: dict[str, float], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        kind.model_validate(rows)


def test_rows_are_admitted_one_by_one() -> None:
    kept, refused = TypeThresholds.admitted({"weather": 0.1, "detection": 7.0, "forensic": 0.02})
    assert dict(kept.items()) == {"forensic": 0.02}
    assert refused == {"weather": 0.1, "detection": 7.0}
