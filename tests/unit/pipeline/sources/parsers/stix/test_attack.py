"""The STIX parser on ATT&CK: the real enterprise bundle, plus inline edge cases."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.sources.parsers import stix
from pipeline.sources.parsing import select_files
from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry

from .bundles import UPSTREAM, bundle_file, parse_upstream


@pytest.fixture(scope="module")
def attack() -> dict[str, Record]:
    outcome = parse_upstream("mitre_attack")
    assert len(outcome.records) == 1743
    assert outcome.skipped == ()
    assert outcome.files_seen == 1
    assert outcome.with_techniques == 1738
    return {r.doc_id: r for r in outcome.records}


def test_attack_kinds(attack: dict[str, Record]) -> None:
    kinds: dict[str, int] = {}
    for record in attack.values():
        kinds[record.metadata["kind"]] = kinds.get(record.metadata["kind"], 0) + 1
    assert kinds == {
        "technique": 216,
        "sub-technique": 475,
        "group": 172,
        "software": 784,
        "mitigation": 44,
        "campaign": 52,
    }


def test_attack_sub_technique(attack: dict[str, Record]) -> None:
    r = attack["mitre_attack:T1003.001"]
    assert r.title == "OS Credential Dumping: LSASS Memory"
    assert r.url == "https://attack.mitre.org/techniques/T1003/001"
    assert r.techniques == ("T1003.001",)
    assert r.platforms == ("windows",)
    assert r.metadata["parent"] == "T1003"
    assert "procdump -ma lsass.exe" in r.body
    assert "credential-access" in r.tags


def test_attack_technique_body_names_mitigations(attack: dict[str, Record]) -> None:
    r = attack["mitre_attack:T1003"]
    assert r.title == "OS Credential Dumping"
    assert r.platforms == ("linux", "macos", "windows")
    assert "M1026 Privileged Account Management" in r.body


def test_attack_group_software_mitigation_carry_related_techniques(attack: dict[str, Record]) -> None:
    group, tool, mitigation = (attack["mitre_attack:G0007"], attack["mitre_attack:S0002"], attack["mitre_attack:M1026"])
    assert (group.title, group.url) == ("APT28", "https://attack.mitre.org/groups/G0007")
    assert "Fancy Bear" in group.body and "T1003.001" in group.techniques
    assert len(group.techniques) == 91
    assert (tool.title, tool.platforms, tool.metadata["kind"]) == ("Mimikatz", ("windows",), "software")
    assert "T1003.001" in tool.techniques and "Type: tool" in tool.body
    assert len(mitigation.techniques) == 112
    assert attack["mitre_attack:C0001"].url == "https://attack.mitre.org/campaigns/C0001"


def test_attack_skips_revoked_and_deprecated(attack: dict[str, Record]) -> None:
    assert "mitre_attack:T1066" not in attack  # revoked
    assert "mitre_attack:T1053.004" not in attack  # deprecated
    assert "mitre_attack:T1064" not in attack  # deprecated technique
    assert not any("(Citation:" in r.body for r in attack.values())


def test_attack_reads_enterprise_bundle_only() -> None:
    files = select_files(default_registry()["mitre_attack"], UPSTREAM / "mitre_attack")
    assert [f.relative_to(UPSTREAM / "mitre_attack").as_posix() for f in files] == [
        "enterprise-attack/enterprise-attack.json"
    ]
    assert default_registry()["mitre_attack"].max_file_bytes == 209715200


def _pattern(stix_id: str, ext: str, name: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "attack-pattern",
        "id": stix_id,
        "name": name,
        "description": "Text (Citation: X).",
        "external_references": [
            {
                "source_name": "mitre-attack",
                "external_id": ext,
                "url": f"https://attack.mitre.org/techniques/{ext.replace('.', '/')}",
            }
        ],
        "x_mitre_platforms": ["Windows", "Office Suite"],
        **extra,
    }


@pytest.mark.parametrize("spec", ["2.0", "2.1"])
def test_attack_accepts_both_spec_versions(spec: str) -> None:
    objects = [
        _pattern("attack-pattern--p", "T9000", "Parent"),
        _pattern("attack-pattern--c", "T9000.001", "Child", x_mitre_is_subtechnique=True),
        _pattern("attack-pattern--r", "T9001", "Gone", revoked=True),
        _pattern("attack-pattern--d", "T9002", "Old", x_mitre_deprecated=True),
        {
            "type": "relationship",
            "id": "relationship--1",
            "relationship_type": "subtechnique-of",
            "source_ref": "attack-pattern--c",
            "target_ref": "attack-pattern--p",
        },
    ]
    if spec == "2.1":
        objects = [{**o, "spec_version": "2.1"} for o in objects]
        file = bundle_file("mitre_attack", objects)
    else:
        file = bundle_file("mitre_attack", objects, spec_version="2.0")
    records = {r.upstream_id: r for r in stix.parse(file)}
    assert sorted(records) == ["T9000", "T9000.001"]
    assert records["T9000.001"].title == "Parent: Child"
    assert records["T9000"].platforms == ("office365", "windows")
    assert records["T9000"].body.endswith("Text.")


def test_attack_sub_technique_parent_from_id_prefix_without_relationship() -> None:
    objects = [
        _pattern("attack-pattern--p", "T9000", "Parent"),
        _pattern("attack-pattern--c", "T9000.001", "Child", x_mitre_is_subtechnique=True),
    ]
    records = {r.upstream_id: r for r in stix.parse(bundle_file("mitre_attack", objects))}
    assert records["T9000.001"].title == "Parent: Child"
