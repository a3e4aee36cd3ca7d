"""A layer comparison's answer is bounded by design: entries under a tactic the domain does not have are left out
and reported, a technique's comment is merged once and cut at COMMENT_CAP (saying so), and the estimate checked
against SECRAG_MAX_ANSWER_BYTES is an upper bound of the answer's JSON, however hostile the names and comments."""

from __future__ import annotations

from typing import Any

import pytest

from serving.contract.layer_models import CompareResponse, LayerIn, Operation
from serving.layers.algebra import compare
from serving.layers.answer_size import estimated_bytes
from serving.layers.comments import COMMENT_CAP, cut
from serving.layers.result_layer import result_layer
from serving.layers.screen import report
from serving.layers.technique_set import read_layer

ENTERPRISE = frozenset({"credential-access", "defense-evasion", "execution", "persistence"})


def layer(name: str, entries: list[dict[str, Any]]) -> LayerIn:
    return LayerIn.model_validate({"name": name, "domain": "enterprise-attack", "techniques": entries})


def test_entries_under_a_tactic_the_domain_lacks_are_left_out_and_reported_once_each() -> None:
    read = read_layer(
        layer(
            "l",
            [
                {"techniqueID": "T1003", "tactic": "credential-access", "comment": "kept"},
                {"techniqueID": "T1003", "tactic": "tactic-0001", "comment": "dropped"},
                {"techniqueID": "T1059", "tactic": "tactic-0002"},
                {"techniqueID": "T1059", "tactic": "tactic-0001"},
                {"techniqueID": "T1105"},  # no tactic: every tactic of the technique, kept
            ],
        ),
        tactics=ENTERPRISE,
    )
    assert list(read.techniques) == ["T1003", "T1105"]  # T1059 had only unknown tactics
    assert read.techniques["T1003"].tactics == ("credential-access",)
    assert read.techniques["T1003"].comments == ("kept",)  # its one entry read: no tactic label
    assert read.unknown_tactics == ("tactic-0001", "tactic-0002")
    assert read.entries == 5
    said = report(read, unknown=[], revoked=[], deprecated=[])
    assert said.unknown_tactics == ["tactic-0001", "tactic-0002"]


def test_without_the_domains_tactics_every_tactic_is_read() -> None:
    read = read_layer(layer("l", [{"techniqueID": "T1003", "tactic": "tactic-0001"}]))
    assert read.techniques["T1003"].tactics == ("tactic-0001",) and read.unknown_tactics == ()


def test_a_techniques_comments_are_merged_once_and_cut_at_the_cap_saying_so() -> None:
    entries = [
        {"techniqueID": "T1003", "tactic": t, "comment": f"{i} " + "x" * 300}
        for i, t in enumerate(sorted(ENTERPRISE) * 5)
    ]
    left = read_layer(layer("left", entries), tactics=ENTERPRISE)
    right = read_layer(layer("right", [{"techniqueID": "T1059", "comment": "y" * 5000}]), tactics=ENTERPRISE)
    combined = {c.technique: c for c in compare(left, right, "union", "left")}
    t1003 = combined["T1003"]
    assert len(t1003.tactics) == 4 and len(t1003.comment) <= COMMENT_CAP
    assert "… (cut: " in t1003.comment and t1003.comment.endswith("not in right")
    assert len(combined["T1059"].comment) <= COMMENT_CAP and "… (cut: " in combined["T1059"].comment
    built = result_layer(
        list(combined.values()),
        left="left",
        right="right",
        domain="enterprise-attack",
        operation="union",
        scores="left",
    )
    entries_of = [t for t in built.techniques if t.techniqueID == "T1003"]
    assert len(entries_of) == 4 and all(t.comment is t1003.comment for t in entries_of)  # one string, merged once


def test_cut_keeps_short_texts_and_states_the_length_of_long_ones() -> None:
    assert cut("short", 10) == "short"
    long = cut("z" * 5000, 100)
    assert len(long) == 100 and long.endswith("… (cut: 5,000 characters)")


HOSTILE = ["plain ascii", "\x01\x02\x1f" * 3, "é€😀", '"\\/' * 4, "\u2028\ud7ff"]


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("operation", ["minus", "union", "intersect"])
def test_the_estimate_bounds_the_answers_json(text: str, operation: Operation) -> None:
    def entries(score: int) -> list[dict[str, Any]]:
        return [
            {"techniqueID": f"T{1000 + i}", "tactic": t, "score": score + 0.123456789, "comment": text * 200}
            for i in range(30)
            for t in sorted(ENTERPRISE)
        ]

    name = text * 300
    left = read_layer(layer(name[:1000], entries(1)), tactics=ENTERPRISE)
    right = read_layer(layer(name[:1000], entries(-2)[:50]), tactics=ENTERPRISE)
    combined = compare(left, right, operation, "sum")
    reports = [report(s, unknown=["T9999"], revoked=[], deprecated=[]) for s in (left, right)]
    built = result_layer(
        combined,
        left=left.name,
        right=right.name,
        domain="enterprise-attack",
        operation=operation,
        scores="sum",
        name=name[:1000],
    )
    answer = CompareResponse(
        layer=built,
        techniques=[c.technique for c in combined],
        left=reports[0],
        right=reports[1],
        took_ms=123456.78,
    )
    actual = max(len(answer.model_dump_json().encode()), len(answer.model_dump_json(by_alias=True).encode()))
    estimate = estimated_bytes(combined, reports[0], reports[1], [left.name, right.name, name[:1000]])
    assert actual <= estimate <= 2 * actual + 64 * 1024  # an upper bound, and not a wild one
