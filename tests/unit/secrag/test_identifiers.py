"""One table of identifier shapes, used by the enrichment, the query classifier and the parsers."""

from __future__ import annotations

import pytest

from secrag import identifiers
from secrag.enrichment import identifier_variants, technique_mentions
from serving.search.analysis import classify


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("T1003", "technique"),
        ("t1003.001", "sub_technique"),
        ("CVE-2021-44228", "cve"),
        ("cve-2024-1234567", "cve"),
        ("CAPEC-66", "capec"),
        ("AML.T0051.000", "atlas"),
        ("D3-AL", "d3fend"),
        ("D3A-PROC", "d3fend"),
        ("5af54681-df95-4c26-854f-2565e13cfab0", "uuid"),
        ("mimikatz.exe", "identifier"),
    ],
)
def test_the_classifier_reads_the_shared_shapes(query: str, kind: str) -> None:
    assert classify(query) == kind


def test_d3fend_artifact_ids_are_identifiers_in_text() -> None:
    """D3FEND's digital artifacts (D3A-...) are half its ids; the enrichment used to see only D3-..."""
    variants = identifier_variants("Analyses D3A-PROC and D3-PSA; also B0001.002 (MBC) and AML.T0051")
    assert {"d3a-proc", "d3-psa", "b0001.002", "aml.t0051"} <= set(variants)


def test_lower_case_look_alikes_in_text_are_not_dotted_ids() -> None:
    assert "d3-psa" not in identifier_variants("the d3-psa word in lower case")


def test_cve_and_capec_variants() -> None:
    variants = identifier_variants("see cve-2021-44228 and CAPEC-66")
    assert {"cve-2021-44228", "2021-44228", "capec-66"} <= set(variants)


def test_atlas_ids_are_not_attack_techniques() -> None:
    assert technique_mentions("AML.T0051 and T1059/001") == ["T1059.001"]


@pytest.mark.parametrize(
    ("text", "expected"), [("T1003", True), ("T1003.001", True), ("TA0001", False), ("M1047", False), ("t1003", False)]
)
def test_technique_ids_exactly(text: str, expected: bool) -> None:
    assert identifiers.is_technique_id(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("CVE-2021-44228", True), ("cve-2021-44228", True), ("CVE-21-44228", False), ("CVE-2021-44228 ", False)],
)
def test_cve_ids_exactly(text: str, expected: bool) -> None:
    assert identifiers.is_cve_id(text) is expected
