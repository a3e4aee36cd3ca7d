"""The source registry: all 24 sources of SOURCES.md (22 knowledge sources, 2 telemetry schemas), ATT&CK's
procedure examples (a second source on ATT&CK's file), its detection strategies and analytics (a third, on its
three bundles) and the clarifications bundled with secrag; valid specs, importable parsers."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources.registry import default_registry, load_registry, parse_duration
from secrag.errors import ConfigError
from secrag.files.package_data import package_path

EXPECTED = {
    "sigma",
    "mitre_attack",
    "mitre_attack_procedures",  # same upstream file and release as mitre_attack
    "mitre_attack_detections",  # the same release's three bundles (strategies and analytics)
    "mitre_attack_mobile",  # the same release's Mobile and ICS matrices, each with its procedure examples
    "mitre_attack_mobile_procedures",
    "mitre_attack_ics",
    "mitre_attack_ics_procedures",
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
    "clarifications",  # bundled with secrag
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
    elif spec.tracking == "bundled":
        assert not spec.repo and spec.name == "clarifications"
    else:
        assert spec.repo.startswith("https://")


def test_bad_entries_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("description: d\nbranch: main\ntracking: weekly\n")
    with pytest.raises(ConfigError, match="missing"):
        load_registry(tmp_path)


def test_a_source_may_chunk_its_own_way(tmp_path: Path) -> None:
    entry = package_path("pipeline.sources", "registry", "lolbas.yaml").read_text()
    (tmp_path / "lolbas.yaml").write_text(entry + "chunking: {overlap: 200, across: true}\n")
    assert load_registry(tmp_path)["lolbas"].chunking == {"overlap": 200, "across": True}
    (tmp_path / "lolbas.yaml").write_text(entry + "chunking: {size: 900}\n")
    with pytest.raises(ConfigError, match=r"lolbas.yaml: chunking: unknown keys size"):
        load_registry(tmp_path)


def test_durations() -> None:
    assert parse_duration("6h") == 21600
    assert parse_duration("30m") == 1800
    with pytest.raises(ConfigError):
        parse_duration("soon")


def test_poll_intervals_default_by_tracking_and_have_a_floor(tmp_path: Path) -> None:
    registry = default_registry()
    assert {registry[n].poll_interval for n in ("sigma", "atomic", "capec")} == {180}
    assert {registry[n].poll_interval for n in ("elastic", "mitre_attack", "stratus_red_team")} == {600}
    assert registry["cisa_kev"].poll_interval == 300
    entry = package_path("pipeline.sources", "registry", "lolbas.yaml").read_text()
    (tmp_path / "lolbas.yaml").write_text(entry + "poll_interval: 15m\n")
    assert load_registry(tmp_path)["lolbas"].poll_interval == 900
    (tmp_path / "lolbas.yaml").write_text(entry + "poll_interval: 30s\n")
    with pytest.raises(ConfigError, match="at least 60s"):
        load_registry(tmp_path)
