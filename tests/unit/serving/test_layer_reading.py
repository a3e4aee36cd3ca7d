"""Navigator layers read as technique sets (serving/contract/layer_models.py, serving/layers/technique_set.py):
a 4.4 layer as ATT&CK's website writes a group's, a 4.5 export of a rule layer, our own coverage layer read back,
and what is refused with a clear message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from serving.contract.coverage_models import CoverageRequest, KindCoverage, TechniqueCoverage
from serving.contract.layer_models import LayerIn
from serving.coverage.layer import coverage_layer
from serving.layers.screen import asked_domain
from serving.layers.technique_set import read_layer

FILES = Path(__file__).parent / "layer_files"


def layer_file(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FILES / name).read_text(encoding="utf-8"))
    return loaded


def test_a_4_4_group_layer_is_its_enabled_techniques_with_scores_comments_and_tactics() -> None:
    read = read_layer(LayerIn.model_validate(layer_file("apt28_4_4.json")))
    assert (read.name, read.domain, read.format, read.entries) == ("APT28 (G0007)", "enterprise-attack", "4.4", 10)
    assert read.ids() == ["T1003", "T1003.001", "T1059.001", "T1218.011", "T1055", "T1087.002", "T1064", "T1002"]
    assert read.disabled == ("T1059.003",)
    t1003 = read.techniques["T1003"]
    assert t1003.score is None and t1003.comments == () and t1003.tactics == ("credential-access",)
    assert read.techniques["T1003.001"].score == 1 and "Mimikatz" in read.techniques["T1003.001"].comments[0]
    # One entry per tactic: one technique, under both tactics, its one comment once per tactic.
    t1055 = read.techniques["T1055"]
    assert t1055.tactics == ("defense-evasion", "privilege-escalation")
    assert t1055.comments == (
        "[defense-evasion] [APT28](https://attack.mitre.org/groups/G0007) has used process injection.",
        "[privilege-escalation] [APT28](https://attack.mitre.org/groups/G0007) has used process injection.",
    )


def test_a_4_5_export_keeps_the_highest_score_of_a_techniques_entries_and_reads_min_score() -> None:
    layer = LayerIn.model_validate(layer_file("my_rules_4_5.json"))
    read = read_layer(layer)
    assert read.format == "4.5" and read.techniques["T1055"].score == 2 and read.disabled == ("T1218.011",)
    assert read.techniques["T9999"].tactics == ()  # no tactic: every tactic of the technique
    counted = read_layer(layer, min_score=1)
    assert "T1059.001" not in counted.techniques and counted.below_min_score == ("T1059.001",)
    assert counted.ids() == ["T1003.001", "T1055", "T1204.002", "T9999"]


def test_our_own_coverage_layer_reads_back_as_its_techniques_and_scores() -> None:
    none = KindCoverage(count=0, by_source={}, top=[])
    some = KindCoverage(count=2, by_source={"sigma": 2}, top=[])
    techniques = [
        TechniqueCoverage(
            technique_id=t, name=None, detections=d, tests=none, countermeasures=none, notes=none, telemetry=[]
        )
        for t, d in (("T1003", some), ("T1003.001", some), ("T1087.002", none))
    ]
    written = coverage_layer(techniques, asked="G0007").model_dump(mode="json")
    read = read_layer(LayerIn.model_validate(json.loads(json.dumps(written))))
    assert read.format == "4.5" and read.name == "secrag coverage of G0007"
    assert {t: v.score for t, v in read.techniques.items()} == {"T1003": 1, "T1003.001": 1, "T1087.002": 0}
    assert read.techniques["T1003"].comments[0].startswith("detections 2 (sigma 2)")
    # ... and a coverage request takes it as its technique set.
    assert CoverageRequest.model_validate({"technique_layer": written}).technique_layer is not None


def test_a_layer_without_versions_is_read_as_4_5_and_ids_in_any_case() -> None:
    read = read_layer(
        LayerIn.model_validate({"name": "x", "domain": "ics-attack", "techniques": [{"techniqueID": "t0800"}]})
    )
    assert read.format == "4.5" and read.domain == "ics-attack" and read.ids() == ["T0800"]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"versions": {"layer": "4.3", "navigator": "4.6.4"}}, "layer format '4.3' is not read (4.5 and 4.4 are)"),
        ({"versions": {"layer": "3.0"}}, "open the layer in the ATT&CK Navigator and save it"),
        ({"domain": "mitre-enterprise"}, "enterprise-attack"),
        ({"domain": None}, "domain"),
        ({"name": None}, "name"),
        ({"name": "APT\x0028"}, "must not contain NUL characters"),
        ({"techniques": [{"techniqueID": "TA0001"}]}, "techniqueID"),
        ({"techniques": [{"techniqueID": "T1003", "score": "high"}]}, "score"),
        ({"techniques": [{"techniqueID": "T1003", "enabled": "yes"}]}, "enabled"),
        ({"techniques": [{"techniqueID": "T1003", "tactic": "Credential Access"}]}, "tactic"),
        ({"techniques": [{"techniqueID": "T1003", "comment": "x" * 20_001}]}, "comment"),
        ({"techniques": [{"techniqueID": "T1003"}] * 10_001}, "techniques"),
    ],
)
def test_what_is_not_a_readable_layer_is_refused_naming_the_field(change: dict[str, Any], said: str) -> None:
    layer = {**layer_file("apt28_4_4.json"), **change}
    layer = {k: v for k, v in layer.items() if v is not None}
    with pytest.raises(ValidationError) as raised:
        LayerIn.model_validate(layer)
    assert said in str(raised.value)


def test_a_layer_is_read_in_its_own_domain_unless_the_request_names_one() -> None:
    ics = LayerIn.model_validate({"name": "x", "domain": "ics-attack"})
    assert asked_domain(ics, None) == "ics" and asked_domain(ics, "enterprise") == "enterprise"
