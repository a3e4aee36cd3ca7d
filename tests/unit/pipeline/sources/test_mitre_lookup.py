"""The ATT&CK technique table built from the real Enterprise bundle and from tiny inline bundles."""

from __future__ import annotations

import json

import pytest

from pipeline.sources.mitre_lookup import MitreTechnique, attack_platforms, techniques_from_bundle
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
BUNDLE = UPSTREAM / "mitre_attack" / "enterprise-attack" / "enterprise-attack.json"


@pytest.fixture(scope="module")
def table() -> dict[str, MitreTechnique]:
    return {t.id: t for t in techniques_from_bundle(BUNDLE)}


def test_counts_active_and_retired(table: dict[str, MitreTechnique]) -> None:
    active = [t for t in table.values() if t.active]
    assert len(table) == 835
    assert len(active) == 691
    assert sum(1 for t in active if t.parent is None) == 216
    assert sum(1 for t in active if t.parent) == 475
    assert sum(1 for t in table.values() if t.revoked) == 132
    assert sum(1 for t in table.values() if t.deprecated) == 12


def test_technique_and_sub_technique_names(table: dict[str, MitreTechnique]) -> None:
    assert table["T1003"].name == "OS Credential Dumping"
    assert table["T1003"].full_name == "OS Credential Dumping"
    assert table["T1003"].parent is None
    sub = table["T1003.001"]
    assert sub.full_name == "OS Credential Dumping: LSASS Memory"
    assert sub.parent == "T1003"
    assert sub.tactics == ("credential-access",)
    assert sub.platforms == ("windows",)


def test_revoked_technique_points_at_its_replacement(table: dict[str, MitreTechnique]) -> None:
    old = table["T1066"]
    assert old.revoked and not old.active
    assert old.name == "Indicator Removal from Tools"
    assert old.replaced_by == "T1027.005"
    # T1150 was revoked by T1547.011, itself revoked later: the redirect follows the chain.
    assert table["T1547.011"].revoked
    assert table["T1150"].replaced_by == "T1647"
    assert all(t.replaced_by for t in table.values() if t.revoked)


def test_deprecated_technique_kept_as_flagged_entry(table: dict[str, MitreTechnique]) -> None:
    launchd = table["T1053.004"]
    assert launchd.deprecated and not launchd.revoked and launchd.replaced_by is None
    assert launchd.full_name == "Scheduled Task/Job: Launchd"


def test_platform_names_outside_the_vocabulary_are_mapped(table: dict[str, MitreTechnique]) -> None:
    assert attack_platforms(["Office Suite", "Identity Provider", "PRE", "Network Devices"]) == (
        "entra_id",
        "network",
        "office365",
    )
    assert "office365" in table["T1114.002"].platforms


def _tiny_bundle(spec: str) -> bytes:
    parent = {
        "type": "attack-pattern",
        "id": "attack-pattern--p",
        "name": "Parent Thing",
        "external_references": [{"source_name": "mitre-attack", "external_id": "T9000"}],
        "kill_chain_phases": [
            {"kill_chain_name": "mitre-attack", "phase_name": "execution"},
            {"kill_chain_name": "other", "phase_name": "ignored"},
        ],
        "x_mitre_platforms": ["Linux"],
    }
    child = {
        "type": "attack-pattern",
        "id": "attack-pattern--c",
        "name": "Child Thing",
        "x_mitre_is_subtechnique": True,
        "external_references": [{"source_name": "mitre-attack", "external_id": "T9000.001"}],
    }
    old = {
        "type": "attack-pattern",
        "id": "attack-pattern--o",
        "name": "Old Thing",
        "revoked": True,
        "external_references": [{"source_name": "mitre-attack", "external_id": "T8999"}],
    }
    rels = [
        {
            "type": "relationship",
            "id": "relationship--1",
            "relationship_type": "subtechnique-of",
            "source_ref": "attack-pattern--c",
            "target_ref": "attack-pattern--p",
        },
        {
            "type": "relationship",
            "id": "relationship--2",
            "relationship_type": "revoked-by",
            "source_ref": "attack-pattern--o",
            "target_ref": "attack-pattern--c",
        },
    ]
    objects = [parent, child, old, *rels]
    if spec == "2.1":
        objects = [{**o, "spec_version": "2.1"} for o in objects]
        return json.dumps({"type": "bundle", "id": "bundle--x", "objects": objects}).encode()
    bundle = {"type": "bundle", "id": "bundle--x", "spec_version": "2.0", "objects": objects}
    return json.dumps(bundle).encode()


@pytest.mark.parametrize("spec", ["2.0", "2.1"])
def test_accepts_stix_20_and_21_bundles_as_bytes(spec: str) -> None:
    table = {t.id: t for t in techniques_from_bundle(_tiny_bundle(spec))}
    assert table["T9000"].tactics == ("execution",)
    assert table["T9000.001"].full_name == "Parent Thing: Child Thing"
    assert table["T8999"].replaced_by == "T9000.001"


@pytest.mark.parametrize("data", [b"not json", b"[]", b'{"type": "bundle"}', b'{"objects": []}'])
def test_not_a_bundle_raises(data: bytes) -> None:
    with pytest.raises(ParseError):
        techniques_from_bundle(data)
