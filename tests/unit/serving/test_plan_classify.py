"""Query classification table."""

from __future__ import annotations

import pytest

from serving.plans.classify import classify
from serving.plans.plans_file import load_plans
from serving.settings.api import default_plans_file

RULES = load_plans(default_plans_file()).classification


@pytest.mark.parametrize(
    "query, query_type, signal",
    [
        ("T1003", "mitre_id", "mitre_id:T1003"),
        ("what is t1059.001 used for", "mitre_id", "mitre_id:t1059.001"),
        ("CVE-2021-44228 exploitation", "vulnerability", "vulnerability:CVE-2021-44228"),
        ("how do I detect credential dumping on Windows", "detection", "keyword:detection:detect"),
        ("prefetch evidence of execution", "forensic", "keyword:forensic:prefetch"),
        ("certutil lolbin download", "lolbin", "keyword:lolbin:lolbin"),
        ("simulate kerberoasting with atomic", "test", "keyword:test:atomic"),
        ("credential dumping", "default", None),
        ("AML.T0051 prompt injection", "default", None),
    ],
)
def test_classification_table(query: str, query_type: str, signal: str | None) -> None:
    result = classify(query, RULES)
    assert result.query_type == query_type
    if signal:
        assert signal in result.signals


def test_platform_words_are_signals() -> None:
    result = classify("detect persistence on linux and aws", RULES)
    assert result.platforms == ("linux", "aws")
    assert "platform:linux" in result.signals


def test_keyword_ties_break_by_fixed_priority() -> None:
    # one detection keyword, one test keyword: detection wins by priority
    assert classify("rule atomic", RULES).query_type == "detection"


def test_id_rules_beat_keywords() -> None:
    assert classify("detect T1003 with sigma", RULES).query_type == "mitre_id"


def test_words_inside_other_words_do_not_match() -> None:
    assert classify("protest contest", RULES).query_type == "default"
