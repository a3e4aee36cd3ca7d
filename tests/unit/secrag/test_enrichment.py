"""Enrichment used at index and query time."""

from __future__ import annotations

import pytest

from secrag.enrichment import enrich, identifier_variants, technique_mentions

LOOKUP = {
    "T1003": "OS Credential Dumping",
    "T1003.001": "OS Credential Dumping: LSASS Memory",
    "T1059": "Command and Scripting Interpreter",
}


def test_names_are_appended_once_per_technique() -> None:
    text = enrich("T1003 and again T1003, plus t1059", LOOKUP)
    assert text.endswith("T1003 OS Credential Dumping; T1059 Command and Scripting Interpreter")
    assert text.count("OS Credential Dumping") == 1


def test_query_and_index_use_the_same_function() -> None:
    assert enrich("T1003", LOOKUP) == "T1003\n\nT1003 OS Credential Dumping"


def test_unknown_ids_and_plain_text_are_left_alone() -> None:
    assert enrich("T9999 nothing here", LOOKUP) == "T9999 nothing here"
    assert enrich("no ids", LOOKUP) == "no ids"


def test_tagged_techniques_are_enriched_even_if_not_in_text() -> None:
    assert enrich("body", LOOKUP, extra_techniques=["T1003.001"]).endswith("LSASS Memory")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("T1059.001", {"t1059", "t1059.001"}),
        ("run mimikatz.exe now", {"mimikatz", "mimikatz.exe"}),
        (r"C:\Windows\System32\certutil.exe -urlcache", {"certutil", "certutil.exe"}),
        ("CVE-2021-44228", {"cve-2021-44228", "2021-44228"}),
        ("CAPEC-66", {"capec-66"}),
        ("AML.T0051 and D3-AL", {"aml.t0051", "d3-al"}),
        ("5af54681-df95-4c26-854f-2565e13cfab0", {"5af54681-df95-4c26-854f-2565e13cfab0"}),
    ],
)
def test_identifier_variants(text: str, expected: set[str]) -> None:
    assert expected <= set(identifier_variants(text))


def test_atlas_ids_are_not_read_as_attack_ids() -> None:
    assert technique_mentions("AML.T0051") == []
