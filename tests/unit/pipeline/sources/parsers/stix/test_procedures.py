"""ATT&CK procedure examples: the real enterprise bundle's `uses` relationships, plus inline edge cases."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from pipeline.sources.parsers import stix
from pipeline.sources.parsers.stix.text import plain_links
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry

from .bundles import UPSTREAM, bundle_file

SOURCE = "mitre_attack_procedures"


@pytest.fixture(scope="module")
def procedures() -> dict[str, Record]:
    # The source has no snapshot folder of its own: it reads ATT&CK's file.
    outcome = parse_source(default_registry()[SOURCE], UPSTREAM / "mitre_attack")
    assert len(outcome.records) == 16017  # every described `uses` of a technique (9836+800 software)
    assert outcome.skipped == ()
    assert outcome.with_techniques == 16017
    return {r.doc_id: r for r in outcome.records}


def test_actor_kinds(procedures: dict[str, Record]) -> None:
    kinds = Counter(r.metadata["actor_type"] for r in procedures.values())
    assert kinds == {"software": 10636, "group": 4362, "campaign": 1019}
    assert len({r.techniques[0] for r in procedures.values()}) == 599


def test_a_campaign_procedure_on_a_sub_technique(procedures: dict[str, Record]) -> None:
    r = procedures[f"{SOURCE}:relationship--949cf89d-6d65-4459-83e7-dc826ae9c894"]  # the relationship's STIX id
    assert r.title == "SolarWinds Compromise (C0024) uses T1059.001 Command and Scripting Interpreter: PowerShell"
    # Links read as their text, citation markers gone.
    assert r.body == (
        "During the SolarWinds Compromise, APT29 used PowerShell to create new tasks on remote machines, "
        "identify configuration settings, exfiltrate data, and execute other commands."
    )
    assert r.techniques == ("T1059.001",)  # as labelled, like the technique's own record
    assert r.url == "https://attack.mitre.org/techniques/T1059/001"
    assert r.tags == ("campaign", "procedure")
    m = r.metadata
    assert (m["actor_id"], m["actor_name"], m["actor_type"]) == ("C0024", "SolarWinds Compromise", "campaign")
    assert (m["technique_id"], m["technique_name"]) == ("T1059.001", "Command and Scripting Interpreter: PowerShell")
    assert m["stix_id"] == "relationship--949cf89d-6d65-4459-83e7-dc826ae9c894"
    # The citations are kept as references (upstream's order), one for each marker removed.
    assert [ref["source_name"] for ref in m["references"]] == [
        "Volexity SolarWinds",
        "CrowdStrike StellarParticle January 2022",
        "Microsoft Analyzing Solorigate Dec 2020",
    ]
    markers = set(re.findall(r"\(Citation: ([^)]*)\)", json.loads(r.raw)["description"]))
    assert markers == {ref["source_name"] for ref in m["references"]}
    assert m["references"][0]["url"].startswith("https://www.volexity.com/blog/2020/12/14/")
    assert json.loads(r.raw)["id"] == m["stix_id"]  # its upstream form is the relationship


def test_software_procedure_platforms_are_the_software_s(procedures: dict[str, Record]) -> None:
    r = procedures[f"{SOURCE}:relationship--b7930db8-2cb9-4ecf-b3d3-7425f99140d8"]
    assert r.title == "Mimikatz (S0002) uses T1003.001 OS Credential Dumping: LSASS Memory"
    assert r.platforms == ("windows",)
    assert r.body.startswith("Mimikatz performs credential dumping")


def test_no_markers_or_link_targets_left(procedures: dict[str, Record]) -> None:
    assert not any("(Citation:" in r.body or "](http" in r.body for r in procedures.values())
    assert all(r.body and len(r.body) < 1000 for r in procedures.values())  # one chunk each


def test_technique_records_name_who_used_them() -> None:
    attack = {
        r.upstream_id: r for r in parse_source(default_registry()["mitre_attack"], UPSTREAM / "mitre_attack").records
    }
    m = attack["T1562.001"].metadata
    assert m["procedure_examples"] == {"source": SOURCE, "count": 110}
    assert len(m["used_by"]) == 110 and "APT38 (G0082)" in m["used_by"]
    assert sum(r.metadata.get("procedure_examples", {}).get("count", 0) for r in attack.values()) == 16017
    assert "used_by" not in attack["G0016"].metadata


def _obj(kind: str, stix_id: str, ext: str, name: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "id": stix_id,
        "name": name,
        "external_references": [{"source_name": "mitre-attack", "external_id": ext}],
        **extra,
    }


def _uses(stix_id: str, source: str, target: str, description: str = "Uses it.", **extra: Any) -> dict[str, Any]:
    return {
        "type": "relationship",
        "id": stix_id,
        "relationship_type": "uses",
        "source_ref": source,
        "target_ref": target,
        "description": description,
        **extra,
    }


def test_only_active_described_uses_of_active_techniques_by_actors() -> None:
    objects = [
        _obj("attack-pattern", "attack-pattern--t", "T9000", "Tech", x_mitre_platforms=["Windows", "Linux"]),
        _obj("attack-pattern", "attack-pattern--r", "T9001", "Gone", revoked=True),
        _obj("intrusion-set", "intrusion-set--g", "G9000", "Group"),
        _obj("malware", "malware--m", "S9000", "Soft", x_mitre_platforms=["Linux"]),
        _obj("malware", "malware--old", "S9001", "Old", x_mitre_deprecated=True),
        _obj("course-of-action", "course-of-action--c", "M9000", "Mit"),
        _uses(
            "relationship--ok", "intrusion-set--g", "attack-pattern--t", "[Group](https://x/G9000) did (Citation: A)"
        ),
        _uses("relationship--soft", "malware--m", "attack-pattern--t"),
        _uses("relationship--bare", "intrusion-set--g", "attack-pattern--t", ""),
        _uses("relationship--rev", "intrusion-set--g", "attack-pattern--t", revoked=True),
        _uses("relationship--dep", "intrusion-set--g", "attack-pattern--t", x_mitre_deprecated=True),
        _uses("relationship--gone", "intrusion-set--g", "attack-pattern--r"),
        _uses("relationship--olds", "malware--old", "attack-pattern--t"),
        _uses("relationship--sw", "intrusion-set--g", "malware--m"),  # a group using software: no technique
        {**_uses("relationship--mit", "course-of-action--c", "attack-pattern--t"), "relationship_type": "mitigates"},
    ]
    records = {r.upstream_id: r for r in stix.parse(bundle_file(SOURCE, objects))}
    assert sorted(records) == ["relationship--ok", "relationship--soft"]
    assert records["relationship--ok"].body == "Group did"
    assert records["relationship--ok"].platforms == ("linux", "windows")
    assert records["relationship--soft"].platforms == ("linux",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[APT29](https://attack.mitre.org/groups/G0016) used it", "APT29 used it"),
        ("see [T1059](https://attack.mitre.org/techniques/T1059/001).", "see T1059."),
        ("a [bracket] stays, (and parentheses)", "a [bracket] stays, (and parentheses)"),
        ("[not a link](relative/path)", "[not a link](relative/path)"),
    ],
)
def test_plain_links(text: str, expected: str) -> None:
    assert plain_links(text) == expected
