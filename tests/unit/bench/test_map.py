"""bench/map.py: the scoring of POST /v1/map on whole reports: technique-set P/R/F1 per report, micro and macro
over reports, and the sentence precision of the supporting sentences against annotated spans."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # a script beside its siblings
from map import (  # noqa: E402
    Answer,
    Report,
    answer_of,
    figures,
    from_reports,
    leading_text,
    overlaps,
    prf,
    scores,
    sentence_hits,
    summary,
)


def test_prf_is_zero_where_undefined_and_harmonic_otherwise() -> None:
    assert prf(0, 0, 0) == (0.0, 0.0, 0.0)
    assert prf(0, 3, 0) == (0.0, 0.0, 0.0)
    assert prf(1, 1, 2) == pytest.approx((0.5, 1 / 3, 0.4))


def test_scores_count_the_techniques_at_or_over_the_threshold() -> None:
    found = {"T1005": 0.35, "T1027": 0.3, "T1113": 0.1}
    relevant = {"T1005", "T1566.001"}
    assert scores(found, relevant, 0.3) == (1, 1, 1)  # T1027 at exactly 0.3 is kept
    assert scores(found, relevant, 0.0) == (1, 2, 1)
    assert scores(found, relevant, 0.5) == (0, 0, 2)


def test_micro_sums_the_counts_and_macro_averages_the_reports() -> None:
    # report a: P 1, R 1/2; report b: P 1/4, R 1 (1 right of 4 found)
    micro_p, micro_r, micro_f, macro_p, macro_r, macro_f = summary([(1, 0, 1), (1, 3, 0)])
    assert (micro_p, micro_r) == pytest.approx((2 / 5, 2 / 3))
    assert micro_f == pytest.approx(2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3))
    assert (macro_p, macro_r) == pytest.approx((5 / 8, 3 / 4))
    assert macro_f == pytest.approx((2 / 3 + 0.4) / 2)


def test_spans_overlap_when_they_share_a_character() -> None:
    assert overlaps((0, 10), (5, 6))
    assert overlaps((5, 6), (0, 10))
    assert overlaps((0, 10), (9, 20))
    assert not overlaps((0, 10), (10, 20))  # end excluded: touching is not overlapping
    assert not overlaps((30, 40), (0, 10))


def test_a_sentence_is_right_only_over_an_annotation_of_its_own_technique() -> None:
    annotations = [(10, 30, "T1005"), (50, 60, "T1027"), (100, 120, "T1005")]
    supports = {
        "T1005": [(0, 40), (45, 70), (110, 115)],  # over its annotation, over T1027's, inside its second one
        "T1027": [(55, 80)],
        "T1113": [(0, 40)],  # a sentence that describes a technique, but another one
    }
    assert sentence_hits(supports, annotations) == (3, 5)  # T1005's first and third, T1027's
    assert sentence_hits({}, annotations) == (0, 0)


def test_a_report_line_is_read_as_it_is() -> None:
    [report] = from_reports(
        [
            {
                "origin": "tram2:x.mjson",
                "text": "Intro. It dumps LSASS.",
                "annotations": [{"start": 7, "end": 22, "technique": "T1003.001"}],
                "techniques": ["T1003.001"],
            }
        ]
    )
    assert report == Report(
        "tram2:x.mjson", "Intro. It dumps LSASS.", frozenset({"T1003.001"}), ((7, 22, "T1003.001"),)
    )


def test_the_latency_text_ends_at_the_first_sentence_end_with_enough_words() -> None:
    text = "One two three. Four five six. Seven eight nine. Ten."
    ends = [14, 29, 47, 52]
    assert leading_text(text, ends, 4) == "One two three. Four five six."
    assert leading_text(text, ends, 3) == "One two three."
    assert leading_text(text, ends, 99) == text


def test_a_map_response_is_read_into_scores_and_spans() -> None:
    body = {
        "techniques": [
            {"technique_id": "T1005", "score": 0.58, "sentences": [{"start": 0, "end": 9}, {"start": 20, "end": 31}]},
        ],
        "sentences": 4,
        "min_score": 0,
        "omitted": 2,
        "unanswered": [{"start": 40, "end": 50, "reason": "timeout"}],
        "took_ms": 12.5,
    }
    assert answer_of(body) == Answer({"T1005": 0.58}, {"T1005": ((0, 9), (20, 31))}, 1, 2)


def test_figures_sweep_every_min_score_and_the_default() -> None:
    a = Report("a", "", frozenset({"T1005", "T1027"}), ((0, 10, "T1005"), (20, 30, "T1027")))
    b = Report("b", "", frozenset({"T1113"}), ((0, 10, "T1113"),))
    answers = {
        # T1005 right twice over (one sentence on its span, one not); T1082 wrong; T1027 under the default
        "a": Answer(
            {"T1005": 0.58, "T1082": 0.35, "T1027": 0.13},
            {"T1005": ((0, 9), (40, 50)), "T1082": ((20, 30),), "T1027": ((20, 30),)},
            0,
            0,
        ),
        "b": Answer({"T1113": 0.35}, {"T1113": ((5, 15),)}, 0, 0),
    }
    sweep = figures([a, b], answers, [0.0, 0.5], 0.3)
    assert [row["min_score"] for row in sweep] == [0.0, 0.3, 0.5]
    low, default, high = sweep
    assert default["default"] and not low["default"] and not high["default"]
    # at 0.3: a finds T1005, T1082 (1 right of 2, 1 of 2 relevant); b finds T1113 (1 of 1)
    assert default["micro"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})
    assert default["macro"] == pytest.approx({"precision": 0.75, "recall": 0.75, "f1": (0.5 + 1) / 2})
    assert default["sentence_precision"] == pytest.approx(2 / 4)
    # at 0: T1027's sentence is over its annotation too; at 0.5: only T1005, one of its two sentences
    assert (low["sentence_precision"], low["micro"]["recall"]) == pytest.approx((3 / 5, 1.0))
    assert (high["sentence_precision"], high["micro"]["precision"]) == pytest.approx((1 / 2, 1.0))
