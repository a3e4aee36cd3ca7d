"""The STIX parser on the real ATT&CK, CAPEC and MBC bundles, plus inline edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.sources.parsers import stix
from pipeline.sources.parsing import parse_source, select_files
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError

UPSTREAM = Path(__file__).resolve().parents[3].parent / "shared" / "upstream"


def _parse(source: str) -> ParseOutcome:
    return parse_source(default_registry()[source], UPSTREAM / source)


@pytest.fixture(scope="module")
def attack() -> dict[str, Record]:
    outcome = _parse("mitre_attack")
    assert len(outcome.records) == 1743
    assert outcome.skipped == ()
    assert outcome.files_seen == 1
    assert outcome.with_techniques == 1738
    return {r.doc_id: r for r in outcome.records}


@pytest.fixture(scope="module")
def capec() -> dict[str, Record]:
    outcome = _parse("capec")
    assert len(outcome.records) == 1434
    assert outcome.skipped == ()
    assert outcome.with_techniques == 492
    return {r.doc_id: r for r in outcome.records}


@pytest.fixture(scope="module")
def mbc() -> dict[str, Record]:
    outcome = _parse("mbc")
    assert len(outcome.records) == 703
    assert outcome.skipped == ()
    assert outcome.with_techniques == 159
    return {r.doc_id: r for r in outcome.records}


def _file(source: str, objects: list[dict[str, Any]], **extra: Any) -> SourceFile:
    bundle = {"type": "bundle", "id": "bundle--t", "objects": objects, **extra}
    spec = default_registry()[source]
    return SourceFile(
        source=source,
        root=Path("/nonexistent"),
        rel=spec.paths[0],
        data=json.dumps(bundle).encode(),
        options=spec.options,
        web_url=spec.web_url.replace("{version}", "main"),
    )


# --- mitre_attack -------------------------------------------------------------------------------


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
        file = _file("mitre_attack", objects)
    else:
        file = _file("mitre_attack", objects, spec_version="2.0")
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
    records = {r.upstream_id: r for r in stix.parse(_file("mitre_attack", objects))}
    assert records["T9000.001"].title == "Parent: Child"


@pytest.mark.parametrize("data", [b"{", b"[1, 2]", b'{"type": "bundle", "objects": 3}'])
def test_malformed_bundle_raises(data: bytes) -> None:
    file = SourceFile(source="mitre_attack", root=Path("/x"), rel="a.json", data=data, options={"scheme": "attack"})
    with pytest.raises(ParseError):
        list(stix.parse(file))


def test_unknown_scheme_raises() -> None:
    file = SourceFile(
        source="x", root=Path("/x"), rel="a.json", data=b'{"type": "bundle", "objects": []}', options={"scheme": "nope"}
    )
    with pytest.raises(ParseError, match="unknown stix scheme"):
        list(stix.parse(file))


# --- capec --------------------------------------------------------------------------------------


def test_capec_attack_pattern(capec: dict[str, Record]) -> None:
    r = capec["capec:CAPEC-1"]
    assert r.title == "Accessing Functionality Not Properly Constrained by ACLs"
    assert r.url == "https://capec.mitre.org/data/definitions/1.html"
    assert r.techniques == ("T1574.010",)
    assert "Prerequisites:" in r.body and "<xhtml" not in r.body
    assert capec["capec:CAPEC-131"].techniques == ("T1499",)


def test_capec_mitigation_named_after_its_pattern(capec: dict[str, Record]) -> None:
    r = capec["capec:coa-102-0"]
    assert r.title == "Mitigation for CAPEC-102: Session Sidejacking"
    assert r.url == "https://capec.mitre.org/data/definitions/102.html"
    assert "HTTPS is used" in r.body
    assert r.metadata["mitigates"] == ["CAPEC-102"]


def test_capec_duplicate_mitigation_names_keep_the_newest(capec: dict[str, Record]) -> None:
    # Upstream keeps two courses of action named coa-488-0; the 2023 one supersedes the 2022 one.
    assert capec["capec:coa-488-0"].body.startswith("Design: Use a Web Application Firewall")


def test_capec_skips_deprecated_and_obsolete(capec: dict[str, Record]) -> None:
    kinds = [r.metadata["kind"] for r in capec.values()]
    assert kinds.count("attack-pattern") == 615 - 56 - 1
    assert "capec:CAPEC-5" not in capec  # Obsolete: Blue Boxing
    assert not any(r.title.startswith("DEPRECATED") for r in capec.values())


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1574.010", ("T1574.010",)),
        ("T1499", ("T1499",)),
        ("1003", ("T1003",)),
        ("t1059.001", ("T1059.001",)),
    ],
)
def test_capec_attack_ids_with_or_without_t(raw: str, expected: tuple[str, ...]) -> None:
    pattern = {
        "type": "attack-pattern",
        "id": "attack-pattern--a",
        "name": "A",
        "spec_version": "2.1",
        "x_capec_status": "Draft",
        "external_references": [
            {
                "source_name": "capec",
                "external_id": "CAPEC-9",
                "url": "https://capec.mitre.org/data/definitions/9.html",
            },
            {"source_name": "ATTACK", "external_id": raw},
        ],
    }
    deprecated = {**pattern, "id": "attack-pattern--b", "x_capec_status": "Deprecated"}
    [record] = stix.parse(_file("capec", [pattern, deprecated]))
    assert record.techniques == expected


# --- mbc ----------------------------------------------------------------------------------------


def test_mbc_behavior_method_objective(mbc: dict[str, Record]) -> None:
    behavior = mbc["mbc:B0043"]
    assert behavior.title == "Taskbar Discovery"
    assert behavior.url == ("https://github.com/MBCProject/mbc-markdown/blob/main/discovery/taskbar-discovery.md")
    assert "find taskbar" in behavior.body and behavior.metadata["objectives"] == ["Discovery"]
    method = mbc["mbc:B0029.002"]
    assert method.title == "Polymorphic Code: Call Indirections"
    assert method.url.endswith("/defense-evasion/polymorphic-code.md")
    assert mbc["mbc:OC0008"].title == "Operating System"


def test_mbc_enhanced_ids_map_to_attack(mbc: dict[str, Record]) -> None:
    assert mbc["mbc:E1055.012"].techniques == ("T1055.012",)
    assert mbc["mbc:E1055"].techniques == ("T1055", "T1631")  # own E-id plus ids named in the text
    assert mbc["mbc:E1643.m02"].techniques == ("T1643",)


def test_mbc_malware(mbc: dict[str, Record]) -> None:
    r = mbc["mbc:X0046"]
    assert r.title == "BadUSB"
    assert r.platforms == ("windows",)
    assert r.techniques == ("T1005", "T1091")  # from `uses` relationships to ATT&CK patterns
    assert "B0042 Modify Hardware" in r.body
    assert r.url == "https://github.com/MBCProject/mbc-stix2.1/blob/main/mbc/mbc.json"


def test_mbc_python_literal_strings_are_parsed_without_eval() -> None:
    malware = {
        "type": "malware",
        "id": "malware--m",
        "name": "Evil",
        "spec_version": "2.1",
        "aliases": "['Evil', 'EvilBot']",
        "extensions": {
            "extension-definition--x": {
                "extension_type": "property-extension",
                "obj_defn": "{'external_id': 'X9999', 'description': 'Bad. See T1059.', 'url': ''}",
                "platforms": "['Windows', 'Linux']",
                "year": "2020",
            }
        },
    }
    weird = {
        **malware,
        "id": "malware--w",
        "name": "Weird",
        "aliases": "__import__('os')",
        "extensions": {"e": {"obj_defn": "{'external_id': 'X9998'", "platforms": "[broken"}},
    }
    records = {r.upstream_id: r for r in stix.parse(_file("mbc", [malware, weird]))}
    evil = records["X9999"]
    assert evil.platforms == ("linux", "windows")
    assert evil.techniques == ("T1059",)
    assert evil.metadata["aliases"] == ["EvilBot"]
    # Unparseable literals fall back to the STIX id instead of failing the file.
    assert records["malware--w"].title == "Weird"


def test_mbc_object_without_obj_defn_uses_stix_id() -> None:
    objective = {"type": "malware-objective", "id": "malware-objective--z", "name": "Zed", "spec_version": "2.1"}
    [record] = stix.parse(_file("mbc", [objective]))
    assert record.upstream_id == "malware-objective--z"
