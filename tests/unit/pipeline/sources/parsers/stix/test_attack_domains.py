"""The Mobile and ICS matrices as sources like Enterprise: their real bundles parsed, counted against plain JSON,
and every ATT&CK record's domain."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from typing import Any

import pytest

from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry

from .bundles import UPSTREAM

KINDS = {
    "attack-pattern": "technique",
    "x-mitre-tactic": "tactic",
    "intrusion-set": "group",
    "malware": "software",
    "tool": "software",
    "course-of-action": "mitigation",
    "campaign": "campaign",
}


@cache
def _records(source: str) -> tuple[Record, ...]:
    outcome = parse_source(default_registry()[source], UPSTREAM / "mitre_attack")
    assert outcome.skipped == ()
    return outcome.records


def _objects(domain: str) -> list[dict[str, Any]]:
    path = UPSTREAM / "mitre_attack" / f"{domain}-attack" / f"{domain}-attack.json"
    return list(json.loads(path.read_text(encoding="utf-8"))["objects"])


def _live(obj: dict[str, Any]) -> bool:
    return not obj.get("revoked") and not obj.get("x_mitre_deprecated")


def _expected_kinds(domain: str) -> Counter[str]:
    """Active objects with an ATT&CK id, by kind, read without the parser's code."""
    return Counter(
        KINDS[o["type"]]
        for o in _objects(domain)
        if o["type"] in KINDS
        and _live(o)
        and any(r.get("source_name") == "mitre-attack" for r in o.get("external_references", ()))
    )


@pytest.mark.parametrize(("domain", "techniques"), [("mobile", 124), ("ics", 83)])
def test_a_matrix_s_records_are_its_active_objects(domain: str, techniques: int) -> None:
    records = _records(f"mitre_attack_{domain}")
    kinds = Counter(r.metadata["kind"] for r in records)
    kinds["technique"] += kinds.pop("sub-technique", 0)
    assert kinds == _expected_kinds(domain)
    assert kinds["technique"] == techniques and kinds["tactic"] == 12
    assert {r.metadata["domain"] for r in records} == {domain}


def test_record_counts_per_kind() -> None:
    mobile = Counter(r.metadata["kind"] for r in _records("mitre_attack_mobile"))
    assert mobile == {
        "technique": 77,
        "sub-technique": 47,
        "tactic": 12,
        "group": 17,
        "software": 122,
        "mitigation": 13,
        "campaign": 3,
    }
    ics = Counter(r.metadata["kind"] for r in _records("mitre_attack_ics"))
    assert ics == {"technique": 83, "tactic": 12, "group": 14, "software": 23, "mitigation": 52, "campaign": 7}


@pytest.mark.parametrize("domain", ["mobile", "ics"])
def test_procedure_examples_are_the_described_uses_of_active_techniques(domain: str) -> None:
    objects = _objects(domain)
    by_id = {o["id"]: o for o in objects}
    actors = {"intrusion-set", "malware", "tool", "campaign"}
    expected = {
        o["id"]
        for o in objects
        if o["type"] == "relationship"
        and o["relationship_type"] == "uses"
        and _live(o)
        and (o.get("description") or "").strip()
        and by_id.get(o["source_ref"], {}).get("type") in actors
        and _live(by_id[o["source_ref"]])
        and by_id.get(o["target_ref"], {}).get("type") == "attack-pattern"
        and _live(by_id[o["target_ref"]])
    }
    records = _records(f"mitre_attack_{domain}_procedures")
    assert {r.upstream_id for r in records} == expected
    assert len(records) == {"mobile": 1404, "ics": 246}[domain]
    assert {r.metadata["domain"] for r in records} == {domain}
    techniques = {r.upstream_id for r in _records(f"mitre_attack_{domain}")}
    assert {r.techniques[0] for r in records} <= techniques  # every example is of the matrix's own techniques


def test_enterprise_records_say_enterprise() -> None:
    for source in ("mitre_attack", "mitre_attack_procedures"):
        assert {r.metadata["domain"] for r in _records(source)} == {"enterprise"}


def test_a_mobile_technique() -> None:
    records = {r.upstream_id: r for r in _records("mitre_attack_mobile")}
    sub = records["T1624.001"]
    assert sub.title == "Event Triggered Execution: Broadcast Receivers"
    assert sub.metadata["kind"] == "sub-technique" and sub.metadata["parent"] == "T1624"
    assert sub.metadata["tactics"] == ["persistence"]  # from the Mobile kill chain (mitre-mobile-attack)
    assert set(sub.platforms) <= {"android", "ios"} and sub.platforms
    examples = sub.metadata["procedure_examples"]
    assert examples["source"] == "mitre_attack_mobile_procedures" and examples["count"] > 0


def test_an_ics_technique_and_tactic() -> None:
    records = {r.upstream_id: r for r in _records("mitre_attack_ics")}
    technique = records["T0800"]
    assert technique.title == "Activate Firmware Update Mode"
    assert technique.platforms == ("ics",) and technique.metadata["tactics"] == ["inhibit-response-function"]
    assert technique.metadata["procedure_examples"]["source"] == "mitre_attack_ics_procedures"
    tactic = records["TA0107"]
    assert tactic.title == "Inhibit Response Function" and tactic.metadata["kind"] == "tactic"
    assert tactic.techniques == () and "tactic" in tactic.tags and "inhibit-response-function" in tactic.tags
    assert "T0800 Activate Firmware Update Mode" in tactic.body  # the tactic's techniques, listed


def test_a_group_of_two_matrices_has_a_document_in_each() -> None:
    """Windshift (G0112) is in Enterprise and Mobile: each source keeps its own document with its matrix's
    techniques."""
    enterprise = {r.upstream_id: r for r in _records("mitre_attack")}["G0112"]
    mobile = {r.upstream_id: r for r in _records("mitre_attack_mobile")}["G0112"]
    assert enterprise.title == mobile.title == "Windshift"
    assert (enterprise.metadata["domain"], mobile.metadata["domain"]) == ("enterprise", "mobile")
    assert mobile.techniques and not set(mobile.techniques) & set(enterprise.techniques)
