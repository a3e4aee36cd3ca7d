"""The STIX parser on CAPEC: attack patterns and courses of action, real and inline."""

from __future__ import annotations

import pytest

from pipeline.sources.parsers import stix
from pipeline.sources.records import Record

from .bundles import bundle_file, parse_upstream


@pytest.fixture(scope="module")
def capec() -> dict[str, Record]:
    outcome = parse_upstream("capec")
    assert len(outcome.records) == 1434
    assert outcome.skipped == ()
    assert outcome.with_techniques == 492
    return {r.doc_id: r for r in outcome.records}


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
    [record] = stix.parse(bundle_file("capec", [pattern, deprecated]))
    assert record.techniques == expected
