"""The source registry: all 24 sources of SOURCES.md (22 knowledge sources, 2 telemetry schemas), valid specs,
importable parsers."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources.registry import default_registry, load_registry, parse_duration
from secrag.errors import ConfigError

EXPECTED = {
    "sigma",
    "mitre_attack",
    "atomic",
    "elastic",
    "cisa_kev",
    "capec",
    "splunk_security",
    "kape",
    "forensic_artifacts",
    "mbc",
    "hijacklibs",
    "loldrivers",
    "mitre_d3fend",
    "gtfobins",
    "velociraptor",
    "hayabusa",
    "lolbas",
    "chainsaw",
    "mitre_car",
    "stratus_red_team",
    "mitre_atlas",
    "mitre_engage",
    "ossem_dd",
    "ecs",
}
CATEGORIES = {"technique", "detection", "test", "forensic", "lolbin", "vulnerability", "schema"}


def test_every_source_is_registered() -> None:
    assert set(default_registry()) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_spec_is_complete_and_parser_importable(name: str) -> None:
    spec = default_registry()[name]
    assert spec.paths and spec.license and spec.description
    assert spec.category in CATEGORIES
    assert callable(spec.parser_module().parse)
    if spec.tracking == "release":
        assert spec.github.count("/") == 1
    if spec.tracking == "feed":
        assert spec.feed_url.startswith("https://")
    else:
        assert spec.repo.startswith("https://")


def test_bad_entries_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("description: d\nbranch: main\ntracking: weekly\n")
    with pytest.raises(ConfigError, match="missing"):
        load_registry(tmp_path)


def test_durations() -> None:
    assert parse_duration("6h") == 21600
    assert parse_duration("30m") == 1800
    with pytest.raises(ConfigError):
        parse_duration("soon")
