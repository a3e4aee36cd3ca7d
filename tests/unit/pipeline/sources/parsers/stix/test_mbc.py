"""The STIX parser on MBC: behaviors, methods, objectives and malware, real and inline."""

from __future__ import annotations

import pytest

from pipeline.sources.parsers import stix
from pipeline.sources.records import Record

from .bundles import bundle_file, parse_upstream


@pytest.fixture(scope="module")
def mbc() -> dict[str, Record]:
    outcome = parse_upstream("mbc")
    assert len(outcome.records) == 703
    assert outcome.skipped == ()
    assert outcome.with_techniques == 159
    return {r.doc_id: r for r in outcome.records}


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
    records = {r.upstream_id: r for r in stix.parse(bundle_file("mbc", [malware, weird]))}
    evil = records["X9999"]
    assert evil.platforms == ("linux", "windows")
    assert evil.techniques == ("T1059",)
    assert evil.metadata["aliases"] == ["EvilBot"]
    # Unparseable literals fall back to the STIX id instead of failing the file.
    assert records["malware--w"].title == "Weird"


def test_mbc_object_without_obj_defn_uses_stix_id() -> None:
    objective = {"type": "malware-objective", "id": "malware-objective--z", "name": "Zed", "spec_version": "2.1"}
    [record] = stix.parse(bundle_file("mbc", [objective]))
    assert record.upstream_id == "malware-objective--z"
