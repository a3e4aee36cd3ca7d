"""Attention flags of one answered request, and the report that counts them."""

from __future__ import annotations

from secrag.enrichment import technique_mentions
from serving.feedback.attention import FlaggedQuery, Hit, flags, report

KNOWN = {"T1003", "T1003.001", "T1059"}


def _flags(query: str, hits: list[Hit]) -> list[str]:
    return flags(query, hits, known=KNOWN, low_score=0.6, weak_match=0.5)


def test_attack_ids_are_read_as_enrichment_reads_them_once_upper_cased() -> None:
    assert technique_mentions("t1003 and T1003.001, then T1003 again; T10030 is not one") == ["T1003", "T1003.001"]


def test_each_flag() -> None:
    assert _flags("nothing here", []) == ["zero_results"]
    assert _flags("lsass", [Hit("sigma:a", 0.41, [])]) == ["low_score:0.410"]
    assert _flags("lsass", [Hit("sigma:a", 0.9, [])]) == []
    assert _flags("T9999 and T1059", [Hit("mitre_attack:T1059", 0.95, [])]) == ["unknown_attack_ids:T9999"]
    # A named, known technique whose documents are missing from the results, or score low.
    assert _flags("T1003 dumping", [Hit("sigma:a", 0.9, ["T1059"])]) == ["weak_attack_match:0.000"]
    assert _flags("T1003 dumping", [Hit("sigma:a", 0.9, []), Hit("sigma:b", 0.3, ["T1003"])]) == [
        "weak_attack_match:0.300"
    ]
    assert _flags("T1003 dumping", [Hit("sigma:a", 0.9, ["T1003"])]) == []
    assert _flags("T1003.001", [Hit("mitre_attack:T1003.001", 1.0, [])]) == []  # the technique itself


def test_the_report_counts_kinds_and_groups_the_content_gaps() -> None:
    rows = [
        FlaggedQuery("search", "keyword", "Quantum Widget", ["zero_results"]),
        FlaggedQuery("plan", "keyword", "quantum widget ", ["zero_results", "unknown_attack_ids:T9999"]),
        FlaggedQuery("search", "natural", None, ["zero_results"]),
        FlaggedQuery("mcp:search", "technique", None, ["low_score:0.300"]),
    ]
    result = report(rows)
    assert result.flagged == 4
    assert result.kinds == {"zero_results": 3, "unknown_attack_ids": 1, "low_score": 1}
    assert result.gaps == [("quantum widget", 2), ("(natural query)", 1)]
    assert result.unknown_ids == {"T9999": 1}
