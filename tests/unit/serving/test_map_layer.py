"""The Navigator layer of a map (serving/mapping/layer.py) against the layer format 4.5, whose property tables
(mitre-attack/attack-navigator, layers/LAYERFORMATv4_5.md) are written out below as a JSON Schema."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from serving.contract.map_models import MappedTechnique, SupportingSentence
from serving.mapping.layer import attack_version, navigator_layer

_STRING: dict[str, Any] = {"type": "string"}
_BOOL: dict[str, Any] = {"type": "boolean"}
_DIVIDER = {"type": "object", "required": ["divider"], "properties": {"divider": _BOOL}, "additionalProperties": False}
_PAIR = {
    "type": "object",
    "required": ["name", "value"],
    "properties": {"name": _STRING, "value": _STRING},
    "additionalProperties": False,
}
_LINK = {
    "type": "object",
    "required": ["label", "url"],
    "properties": {"label": _STRING, "url": {"type": "string", "pattern": "^[a-z]+://"}},
    "additionalProperties": False,
}
_METADATA = {"type": "array", "items": {"oneOf": [_PAIR, _DIVIDER]}}
_LINKS = {"type": "array", "items": {"oneOf": [_LINK, _DIVIDER]}}
COLOR = {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"}
LAYER_4_5: dict[str, Any] = {
    "type": "object",
    "required": ["name", "domain"],
    "additionalProperties": False,
    "properties": {
        "versions": {
            "type": "object",
            "required": ["navigator", "layer"],
            "additionalProperties": False,
            "properties": {"attack": _STRING, "navigator": _STRING, "layer": {"const": "4.5"}},
        },
        "name": _STRING,
        "description": _STRING,
        "domain": {"enum": ["enterprise-attack", "mobile-attack", "ics-attack"]},
        "customDataURL": _STRING,
        "filters": {"type": "object", "properties": {"platforms": {"type": "array", "items": _STRING}}},
        "sorting": {"enum": [0, 1, 2, 3]},
        "layout": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "layout": {"enum": ["side", "flat", "mini"]},
                "showID": _BOOL,
                "showName": _BOOL,
                "showAggregateScores": _BOOL,
                "countUnscored": _BOOL,
                "aggregateFunction": {"enum": ["average", "min", "max", "sum"]},
                "expandedSubtechniques": {"enum": ["none", "all", "annotated"]},
            },
        },
        "hideDisabled": _BOOL,
        "techniques": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["techniqueID"],
                "additionalProperties": False,
                "properties": {
                    "techniqueID": {"type": "string", "pattern": r"^T\d{4}(\.\d{3})?$"},
                    "tactic": _STRING,
                    "comment": _STRING,
                    "enabled": _BOOL,
                    "score": {"type": "number"},
                    "color": _STRING,
                    "metadata": _METADATA,
                    "links": _LINKS,
                    "showSubtechniques": _BOOL,
                },
            },
        },
        "gradient": {
            "type": "object",
            "required": ["colors", "minValue", "maxValue"],
            "additionalProperties": False,
            "properties": {
                "colors": {"type": "array", "minItems": 2, "items": COLOR},
                "minValue": {"type": "number"},
                "maxValue": {"type": "number"},
            },
        },
        "legendItems": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["label", "color"],
                "additionalProperties": False,
                "properties": {"label": _STRING, "color": COLOR},
            },
        },
        "showTacticRowBackground": _BOOL,
        "tacticRowBackground": _STRING,
        "selectTechniquesAcrossTactics": _BOOL,
        "selectSubtechniquesWithParent": _BOOL,
        "selectVisibleTechniques": _BOOL,
        "metadata": _METADATA,
        "links": _LINKS,
    },
}


def assert_valid_layer(layer: dict[str, Any]) -> None:
    """The layer as JSON against format 4.5, and what the tables say in words: maxValue > minValue, a
    Navigator of at least 4.9.0."""
    jsonschema.validate(layer, LAYER_4_5)
    assert layer["gradient"]["maxValue"] > layer["gradient"]["minValue"]
    navigator = tuple(int(part) for part in layer["versions"]["navigator"].split("."))
    assert navigator >= (4, 9, 0)


def technique(technique_id: str, score: float, *spans: tuple[int, int, str]) -> MappedTechnique:
    return MappedTechnique(
        technique_id=technique_id,
        name=technique_id,
        score=score,
        tactics=["execution"],
        sentences=[
            SupportingSentence(start=a, end=b, text=t, rank=1, search_score=0.9, vote=0.35) for a, b, t in spans
        ],
        citations=[],
    )


def test_a_layer_is_format_4_5_with_scores_and_comments() -> None:
    techniques = [
        technique("T1059.001", 0.5775, (0, 30, "It ran encoded\nPowerShell."), (31, 60, "PowerShell again ran.")),
        technique("T1059", 0.35, (61, 90, "A command interpreter ran.")),
        technique("T1003.001", 0.35, *((i * 10, i * 10 + 9, f"Sentence {i}") for i in range(7))),
    ]
    layer = navigator_layer(techniques, sentences=12, min_score=0.3, model="m", source_version="v18.1")
    data = layer.model_dump(mode="json")
    assert_valid_layer(data)
    assert data["versions"] == {"attack": "18", "navigator": "5.1.0", "layer": "4.5"}
    assert data["domain"] == "enterprise-attack" and data["sorting"] == 3
    by_id = {t["techniqueID"]: t for t in data["techniques"]}
    assert [t["techniqueID"] for t in data["techniques"]] == ["T1059.001", "T1059", "T1003.001"]
    assert by_id["T1059.001"]["score"] == 58 and by_id["T1059"]["score"] == 35
    assert by_id["T1059.001"]["comment"] == "[0:30] It ran encoded PowerShell.\n[31:60] PowerShell again ran."
    assert by_id["T1003.001"]["comment"].endswith("[40:49] Sentence 4\n... and 2 more sentences")
    assert by_id["T1059"]["showSubtechniques"] and not by_id["T1003.001"]["showSubtechniques"]
    assert {"name": "sentences", "value": "12"} in data["metadata"]


def test_an_empty_map_and_an_unknown_attack_version() -> None:
    data = navigator_layer([], sentences=0, min_score=0.3, model="m", source_version="mirror-826684ea20df").model_dump(
        mode="json"
    )
    assert_valid_layer(data)
    assert data["techniques"] == [] and "attack" not in data["versions"]  # absent, not null


@pytest.mark.parametrize(
    ("version", "expected"),
    [("v18.1", "18"), ("v17.0", "17"), ("ATT&CK-v16.1", "16"), ("15", "15"), ("test-v1", None), (None, None)],
)
def test_attack_version(version: str | None, expected: str | None) -> None:
    assert attack_version(version) == expected


def test_the_schema_catches_what_the_format_forbids() -> None:
    good = navigator_layer([], sentences=0, min_score=0.3, model="m", source_version=None).model_dump(mode="json")
    for broken in (
        {**good, "versions": {**good["versions"], "layer": "4.4"}},
        {**good, "domain": "enterprise"},
        {**good, "techniques": [{"techniqueID": "T1059.1", "score": 1}]},
        {**good, "gradient": {**good["gradient"], "colors": ["#ff6666"]}},
        {**good, "legendItems": [{"label": "x"}]},
        {**good, "versions": {**good["versions"], "attack": None}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            assert_valid_layer(broken)
