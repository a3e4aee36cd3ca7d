"""The layer algebra (serving/layers/algebra.py) and the layer of a comparison (serving/layers/result_layer.py):
minus, union and intersect over the fixtures' technique sets, the score combinations, the comments saying where
each technique came from, and the result as a valid format-4.5 layer."""

from __future__ import annotations

from typing import get_args

import pytest

from serving.contract.layer_models import Combine, LayerIn
from serving.layers.algebra import combine, compare
from serving.layers.result_layer import result_layer
from serving.layers.technique_set import TechniqueSet, read_layer
from tests.unit.serving.test_layer_reading import layer_file
from tests.unit.serving.test_map_layer import assert_valid_layer


def sets(right_min_score: float | None = None) -> tuple[TechniqueSet, TechniqueSet]:
    apt28 = read_layer(LayerIn.model_validate(layer_file("apt28_4_4.json")))
    rules = read_layer(LayerIn.model_validate(layer_file("my_rules_4_5.json")), right_min_score)
    return apt28, rules


def test_minus_is_the_lefts_techniques_the_right_lacks_with_the_lefts_scores() -> None:
    apt28, rules = sets()
    result = compare(apt28, rules, "minus", "max")  # minus keeps the left's whatever `scores` says
    assert [c.technique for c in result] == ["T1002", "T1003", "T1064", "T1087.002", "T1218.011"]
    by_id = {c.technique: c for c in result}
    assert by_id["T1003"].score is None and by_id["T1087.002"].score == 1
    assert by_id["T1087.002"].comment == (
        "in APT28 (G0007) (score 1): [APT28](https://attack.mitre.org/groups/G0007) has used tools to enumerate "
        "domain accounts.\nnot in SOC rules"
    )
    assert by_id["T1218.011"].comment.endswith("not in SOC rules")  # the right's entry is disabled
    assert by_id["T1087.002"].tactics == ("discovery",)


def test_a_right_min_score_leaves_its_unscored_and_low_entries_out_of_what_is_subtracted() -> None:
    apt28, rules = sets(right_min_score=1)
    assert "T1059.001" in {c.technique for c in compare(apt28, rules, "minus", "left")}  # its rule scores 0
    assert "T1059.001" not in {c.technique for c in compare(apt28, sets()[1], "minus", "left")}


def test_intersect_and_union_say_both_layers_and_combine_scores() -> None:
    apt28, rules = sets()
    both = {c.technique: c for c in compare(apt28, rules, "intersect", "sum")}
    assert list(both) == ["T1003.001", "T1055", "T1059.001"]
    assert both["T1003.001"].score == 4 and both["T1055"].score == 3
    assert both["T1003.001"].comment.splitlines()[1] == (
        "in SOC rules (score 3): lsass access by non-system process; procdump -ma lsass; comsvcs MiniDump"
    )
    assert both["T1055"].tactics == ("defense-evasion", "privilege-escalation")
    either = {c.technique: c for c in compare(apt28, rules, "union", "right")}
    assert set(either) == set(apt28.techniques) | set(rules.techniques)
    assert either["T1204.002"].comment == "not in APT28 (G0007)\nin SOC rules (score 4): Office child processes"
    assert either["T1003.001"].score == 3 and either["T1087.002"].score == 1 and either["T1003"].score is None
    # An entry for every tactic on either side: the result's entry is for every tactic too.
    assert either["T9999"].tactics == ()


@pytest.mark.parametrize(
    ("how", "left", "right", "expected"),
    [
        ("left", 1, 3, 1),
        ("left", None, 3, 3),
        ("right", 1, 3, 3),
        ("right", 1, None, 1),
        ("max", 1, 3, 3),
        ("min", 1, 3, 1),
        ("sum", 1.5, 3, 4.5),
        ("sum", None, 3, 3),
        ("max", None, None, None),
    ],
)
def test_scores_combine_as_asked(how: Combine, left: float | None, right: float | None, expected: float) -> None:
    assert combine(how, left, right) == expected


@pytest.mark.parametrize("scores", get_args(Combine))
def test_the_result_is_a_4_5_layer_with_an_entry_per_tactic(scores: Combine) -> None:
    apt28, rules = sets()
    result = compare(apt28, rules, "union", scores)
    layer = result_layer(
        result, left=apt28.name, right=rules.name, domain="enterprise-attack", operation="union", scores=scores
    )
    written = layer.model_dump(mode="json")
    assert_valid_layer(written)
    assert written["name"] == "APT28 (G0007) plus SOC rules"
    entries = [(t["techniqueID"], t.get("tactic")) for t in written["techniques"]]
    assert ("T1055", "defense-evasion") in entries and ("T1055", "privilege-escalation") in entries
    assert ("T9999", None) in entries and len(entries) == len(result) + 1
    assert "score" not in next(t for t in written["techniques"] if t["techniqueID"] == "T1003")  # unscored
    assert next(t for t in written["techniques"] if t["techniqueID"] == "T1003")["showSubtechniques"] is True


def test_an_empty_result_is_still_a_valid_layer() -> None:
    apt28, _ = sets()
    layer = result_layer(
        compare(apt28, apt28, "minus", "left"),
        left="a",
        right="a",
        domain="mobile-attack",
        operation="minus",
        scores="left",
        name="nothing left",
    )
    written = layer.model_dump(mode="json")
    assert_valid_layer(written)
    assert written["techniques"] == [] and written["name"] == "nothing left" and written["domain"] == "mobile-attack"


def test_a_multi_line_comment_stays_on_its_layers_line() -> None:
    comment = "detections 2 (sigma 2)\ntests 0\n\nnotes 0"
    left = {"name": "cov", "domain": "enterprise-attack", "techniques": [{"techniqueID": "T1003", "comment": comment}]}
    right = {"name": "none", "domain": "enterprise-attack"}
    [only] = compare(
        read_layer(LayerIn.model_validate(left)), read_layer(LayerIn.model_validate(right)), "minus", "left"
    )
    assert only.comment == "in cov: detections 2 (sigma 2); tests 0; notes 0\nnot in none"
