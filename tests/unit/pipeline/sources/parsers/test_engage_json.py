"""The Engage parser on the real Data/json files, plus inline edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import engage_json
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
ROOT = UPSTREAM / "mitre_engage"


@pytest.fixture(scope="module")
def engage() -> dict[str, Record]:
    outcome = parse_source(default_registry()["mitre_engage"], ROOT)
    assert len(outcome.records) == 45
    assert outcome.skipped == ()
    assert outcome.files_seen == 12  # the mapping and detail files are read but yield no records
    assert outcome.with_techniques == 23
    return {r.doc_id: r for r in outcome.records}


def test_kinds(engage: dict[str, Record]) -> None:
    kinds = [r.metadata["kind"] for r in engage.values()]
    assert (kinds.count("activity"), kinds.count("approach"), kinds.count("goal")) == (31, 9, 5)
    # Only engagement activities map to ATT&CK; strategic ones (SAC) never do.
    assert all(r.upstream_id.startswith("EAC") for r in engage.values() if r.techniques)


def test_activity_with_attack_mapping(engage: dict[str, Record]) -> None:
    r = engage["mitre_engage:EAC0005"]
    assert r.title == "Lures"
    assert r.url == "https://engage.mitre.org/activities/EAC0005/"
    assert len(r.techniques) == 93
    assert "T1003" in r.techniques
    assert "Approaches: Detect (EAP0002), Direct (EAP0004), Disrupt (EAP0005)" in r.body
    assert "EAV0003:" in r.body
    assert r.metadata["goals"] == ["EGO0001", "EGO0002"]


def test_approach_and_goal(engage: dict[str, Record]) -> None:
    approach = engage["mitre_engage:EAP0001"]
    assert (approach.title, approach.url) == ("Collect", "https://engage.mitre.org/approaches/EAP0001/")
    assert "API Monitoring (EAC0001)" in approach.body
    goal = engage["mitre_engage:EGO0001"]
    assert (goal.title, goal.url, goal.techniques) == ("Expose", "https://engage.mitre.org/goals/EGO0001/", ())
    assert "<br>" not in goal.body


def test_mapping_file_itself_yields_no_records() -> None:
    rel = "Data/json/attack_mapping.json"
    file = SourceFile(
        source="mitre_engage",
        root=ROOT,
        rel=rel,
        data=(ROOT / rel).read_bytes(),
        options=default_registry()["mitre_engage"].options,
    )
    assert list(engage_json.parse(file)) == []


def _tree(tmp_path: Path, activities: object, mapping: object | None) -> SourceFile:
    folder = tmp_path / "Data" / "json"
    folder.mkdir(parents=True)
    data = json.dumps(activities).encode()
    (folder / "activities.json").write_bytes(data)
    if mapping is not None:
        (folder / "attack_mapping.json").write_text(json.dumps(mapping))
    return SourceFile(source="mitre_engage", root=tmp_path, rel="Data/json/activities.json", data=data)


def test_missing_mapping_file_means_no_techniques(tmp_path: Path) -> None:
    file = _tree(tmp_path, [{"id": "EAC0100", "name": "New", "description": "d"}], None)
    [record] = engage_json.parse(file)
    assert record.techniques == () and record.title == "New"


def test_mapping_is_reread_when_the_checkout_changes(tmp_path: Path) -> None:
    row = {
        "attack_id": "T1003",
        "attack_technique": "OS Credential Dumping",
        "eac_id": "EAC0100",
        "eav_id": "EAV0001",
        "eav": "v",
    }
    file = _tree(tmp_path, [{"id": "EAC0100", "name": "New", "description": "d"}], [row])
    assert next(engage_json.parse(file)).techniques == ("T1003",)
    changed = [{**row, "attack_id": "T1059.001"}]
    (tmp_path / "Data" / "json" / "attack_mapping.json").write_text(json.dumps(changed))
    assert next(engage_json.parse(file)).techniques == ("T1059.001",)


@pytest.mark.parametrize("data", [b"{not json", b'{"id": "EAC0001"}'])
def test_malformed_record_file_raises(tmp_path: Path, data: bytes) -> None:
    file = SourceFile(source="mitre_engage", root=tmp_path, rel="Data/json/goals.json", data=data)
    with pytest.raises(ParseError):
        list(engage_json.parse(file))
