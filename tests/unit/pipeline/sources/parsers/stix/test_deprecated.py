"""ATT&CK without what spec v4 removes: the stored v18.1 stripped parses to the same records, and the outcome names
what the bundles no longer hold."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pipeline.sources.parsers import stix
from pipeline.sources.parsers.stix.deprecated import COMPONENT_DETECTS, DEPRECATED, NOTE
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record
from pipeline.sources.registry import default_registry
from tests.plugins.attack_spec_v4 import BUNDLES, newest_version, next_index, strip_bundle
from tests.unit.pipeline.sources.parsers.stix.bundles import UPSTREAM, bundle_file

# What the stored v18.1 already lacks: the fields v16-v18 emptied out of every technique, and component detects.
ABSENT_IN_18_1 = [
    "x_mitre_data_sources",
    "x_mitre_permissions_required",
    "x_mitre_system_requirements",
    "x_mitre_defense_bypassed",
    COMPONENT_DETECTS,
]


@pytest.fixture(scope="module")
def stripped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stored mitre_attack folder's bundles with every deprecated field and object stripped."""
    root = tmp_path_factory.mktemp("attack_v4")
    for rel in BUNDLES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(strip_bundle((UPSTREAM / "mitre_attack" / rel).read_bytes()))
    shutil.copyfile(UPSTREAM / "mitre_attack" / "attack-stix-data" / "index.json", root / "index.json")
    return root


def _parse(source: str, root: Path) -> ParseOutcome:
    return parse_source(default_registry()[source], root)


def _facts(outcome: ParseOutcome) -> dict[str, tuple[Any, ...]]:
    def fact(r: Record) -> tuple[Any, ...]:
        return (r.title, r.body, r.techniques, r.platforms, r.tags, r.metadata)

    return {r.doc_id: fact(r) for r in outcome.records}


@pytest.mark.parametrize(
    ("source", "absent_before"),
    [
        ("mitre_attack", ABSENT_IN_18_1),
        ("mitre_attack_detections", ABSENT_IN_18_1),  # what every bundle lacks: Enterprise has remote support
        ("mitre_attack_mobile", ABSENT_IN_18_1[:4] + ["x_mitre_remote_support", COMPONENT_DETECTS]),
        ("mitre_attack_ics", ABSENT_IN_18_1[:4] + ["x_mitre_remote_support", COMPONENT_DETECTS]),
    ],
)
def test_stripped_bundles_parse_to_the_same_records_and_name_what_is_absent(
    source: str, absent_before: list[str], stripped: Path
) -> None:
    before, after = _parse(source, UPSTREAM / "mitre_attack"), _parse(source, stripped)
    assert len(after.records) == len(before.records) > 150
    assert _facts(after) == _facts(before)  # every technique, strategy and analytic says what it said
    assert list(before.notes[NOTE]) == absent_before
    assert list(after.notes[NOTE]) == list(DEPRECATED)


def test_the_stripped_bundle_holds_none_of_the_deprecated_names(stripped: Path) -> None:
    data = (stripped / BUNDLES[0]).read_bytes()
    for name in DEPRECATED[:-1]:  # the last is a relationship's kind, not a name in the text
        assert name.encode() not in data, name
    assert newest_version(next_index((stripped / "index.json").read_bytes())) == "19.0"


def _technique(**extra: Any) -> dict[str, Any]:
    refs = [{"source_name": "mitre-attack", "external_id": "T9999", "url": "https://attack.mitre.org/T9999"}]
    return {"type": "attack-pattern", "id": "attack-pattern--t", "name": "Test", "external_references": refs, **extra}


def _strategy() -> list[dict[str, Any]]:
    refs = [{"source_name": "mitre-attack", "external_id": "DET9999", "url": "https://attack.mitre.org/DET9999"}]
    detects = {
        "type": "relationship",
        "id": "relationship--d",
        "relationship_type": "detects",
        "source_ref": "x-mitre-detection-strategy--s",
        "target_ref": "attack-pattern--t",
    }
    strategy = {"type": "x-mitre-detection-strategy", "id": "x-mitre-detection-strategy--s", "name": "Watch it"}
    return [{**strategy, "external_references": refs}, detects]


def test_the_deprecated_detection_text_is_read_only_without_a_detection_strategy() -> None:
    text = "Monitor process creation."
    [alone] = list(stix.parse(bundle_file("mitre_attack", [_technique(x_mitre_detection=text)])))
    assert f"Detection: {text}" in alone.body
    [strategy] = list(stix.parse(bundle_file("mitre_attack", [_technique(x_mitre_detection=text), *_strategy()])))
    assert text not in strategy.body and "Detection strategies:\n- DET9999 Watch it" in strategy.body


def test_a_bundle_with_every_deprecated_name_has_none_absent() -> None:
    component = {"type": "x-mitre-data-component", "id": "x-mitre-data-component--c", "x_mitre_data_source_ref": "x"}
    detects = {
        "type": "relationship",
        "id": "relationship--c",
        "relationship_type": "detects",
        "source_ref": "x-mitre-data-component--c",
        "target_ref": "t",
    }
    fields = {name: "x" for name in DEPRECATED[:6]}
    objects = [
        _technique(**fields),
        component,
        detects,
        {"type": "x-mitre-data-source", "id": "x-mitre-data-source--d"},
    ]
    file = bundle_file("mitre_attack", objects)
    list(stix.parse(file))
    assert file.notes == {NOTE: []}
