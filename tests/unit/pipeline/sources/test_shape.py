"""Shape bands: a record's kind (metadata key or folder), the kinds a version would lose past their band, and
the registry's `shape:` (defaults in registry/_defaults.yaml, overrides per source, invalid ones refused)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry, load_registry
from pipeline.sources.shape import ShapeBand, shape_from
from secrag.errors import ConfigError

BASE = {"kind": "metadata:kind", "max_shrink": None, "kind_max_shrink": 0.5, "min_kind_records": 10}


def rec(i: int, kind: Any = "technique", path: str = "rules/a.yml") -> Record:  # noqa: ANN401 - any value
    return Record(source="demo", upstream_id=str(i), title="t", body="b", metadata={"kind": kind}, path=path)


def test_kinds_are_read_from_metadata_or_the_first_folder() -> None:
    by_key, by_folder = shape_from({}, BASE, "t"), shape_from({"kind": "folder"}, BASE, "t")
    records = [rec(1), rec(2, "group", "rules-dfir/x.yml"), rec(3, ["not", "text"]), rec(4, "", "top.yml")]
    assert by_key.counts(records) == {"technique": 1, "group": 1}
    assert by_folder.counts(records) == {"rules": 2, "rules-dfir": 1}  # a file at the root has no folder
    assert shape_from({"kind": "none"}, BASE, "t").counts(records) == {}


@pytest.mark.parametrize(
    ("served", "now", "refused"),
    [
        ({"technique": 100}, {"technique": 50}, []),  # exactly the band
        ({"technique": 100}, {"technique": 49}, ["kind 'technique' (metadata:kind) shrank from 100 to 49"]),
        ({"technique": 100, "group": 20}, {"group": 20}, ["kind 'technique' (metadata:kind) shrank from 100 to 0"]),
        ({"campaign": 9}, {}, []),  # under min_kind_records: left to the count's band
        ({"data-source": 40}, {}, []),  # its own band: it may vanish
        ({"technique": 10}, {"technique": 500, "group": 3}, []),  # growth and new kinds are fine
    ],
)
def test_a_kind_past_its_band_is_named(served: dict[str, int], now: dict[str, int], refused: list[str]) -> None:
    band = shape_from({"kinds": {"data-source": 1}}, BASE, "t")
    reasons = band.refusals(served, now)
    assert len(reasons) == len(refused)
    for reason, start in zip(reasons, refused, strict=True):
        assert reason.startswith(start)


def test_the_shipped_registry_states_every_band() -> None:
    registry = default_registry()
    assert all(isinstance(spec.shape, ShapeBand) for spec in registry.values())
    assert registry["sigma"].shape is not None and registry["sigma"].shape.kind == "folder"
    assert registry["mitre_attack"].shape == ShapeBand("metadata:kind", None, 0.5, 10)  # the defaults
    assert registry["mitre_attack"].max_shrink(0.3) == 0.3  # unset: SECRAG_MAX_SHRINK


def _entry(tmp_path: Path, shape: str, defaults: str | None = None) -> Path:
    registry = tmp_path / "registry"
    registry.mkdir(parents=True)
    (registry / "demo.yaml").write_text(
        "description: d\nbranch: main\ntracking: commit\npaths: ['*.yml']\nparser: sigma_rule\n"
        f"parser_version: 1\nlicense: MIT\ncategory: detection\n{shape}",
        encoding="utf-8",
    )
    if defaults is not None:
        (registry / "_defaults.yaml").write_text(defaults, encoding="utf-8")
    return registry


def test_an_entry_overrides_the_defaults_and_a_registry_may_state_its_own(tmp_path: Path) -> None:
    spec = load_registry(_entry(tmp_path, "shape: {max_shrink: 0.9, kinds: {rules: 1}}\n"))["demo"]
    assert spec.shape == ShapeBand("metadata:kind", 0.9, 0.5, 10, {"rules": 1.0})  # the shipped defaults
    assert spec.max_shrink(0.5) == 0.9
    own = _entry(tmp_path / "own", "", "shape: {kind: folder, kind_max_shrink: 0.2, min_kind_records: 3}\n")
    assert set(load_registry(own)) == {"demo"}  # the defaults are no source
    assert load_registry(own)["demo"].shape == ShapeBand("folder", None, 0.2, 3)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("shape: {max_shrink: 1.5}", "max_shrink must be a share"),
        ("shape: {kind_max_shrink: yes}", "kind_max_shrink must be a share"),
        ("shape: {kind: type}", "shape kind must be"),
        ("shape: {kind: 'metadata:'}", "shape kind must be"),
        ("shape: {min_kind_records: 0}", "min_kind_records"),
        ("shape: {kinds: {rules: -1}}", "kinds.rules must be a share"),
        ("shape: {kinds: [rules]}", "kinds must map"),
        ("shape: {band: 0.5}", "unknown shape keys band"),
        ("shape: [1]", "shape must be a mapping"),
    ],
)
def test_an_invalid_band_is_refused(tmp_path: Path, shape: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_registry(_entry(tmp_path, shape + "\n"))
