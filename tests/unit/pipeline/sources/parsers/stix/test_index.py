"""The bundle index: relationships both ways, retired objects left out, newest duplicates, analytics' strategies."""

from __future__ import annotations

from typing import Any

from pipeline.sources.parsers.stix.index import BundleIndex, skipped


def _rel(rid: str, kind: str, source: str, target: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "relationship",
        "id": rid,
        "relationship_type": kind,
        "source_ref": source,
        "target_ref": target,
        **extra,
    }


def test_targets_and_sources_skip_retired_objects_and_relationships() -> None:
    objects: list[dict[str, Any]] = [
        {"type": "course-of-action", "id": "coa--1", "name": "M"},
        {"type": "attack-pattern", "id": "ap--live", "name": "Live"},
        {"type": "attack-pattern", "id": "ap--gone", "name": "Gone", "revoked": True},
        {"type": "attack-pattern", "id": "ap--old", "name": "Old"},
        _rel("r--1", "mitigates", "coa--1", "ap--live"),
        _rel("r--2", "mitigates", "coa--1", "ap--gone"),
        _rel("r--3", "mitigates", "coa--1", "ap--old", x_mitre_deprecated=True),
        _rel("r--4", "uses", "coa--1", "ap--old"),
    ]
    ix = BundleIndex(objects)
    assert [t["id"] for _, t in ix.targets("coa--1", "mitigates")] == ["ap--live"]
    assert [s["id"] for s in ix.sources("ap--live", "mitigates")] == ["coa--1"]
    assert ix.sources("ap--old", "mitigates") == []


def test_courses_of_action_with_one_name_keep_the_newest() -> None:
    objects = [
        {"type": "course-of-action", "id": "coa--a", "name": "coa-1-0", "modified": "2022-01-01"},
        {"type": "course-of-action", "id": "coa--b", "name": " coa-1-0 ", "modified": "2023-01-01"},
        {"type": "course-of-action", "id": "coa--c", "name": "coa-1-0", "modified": "2021-01-01"},
    ]
    assert BundleIndex(objects).newest_by_name["coa-1-0"]["id"] == "coa--b"


def test_an_analytic_s_strategy_is_the_first_active_one_listing_it() -> None:
    strategy = "x-mitre-detection-strategy"
    objects: list[dict[str, Any]] = [
        {"type": strategy, "id": f"{strategy}--gone", "revoked": True, "x_mitre_analytic_refs": ["an--1", "an--2"]},
        {"type": strategy, "id": f"{strategy}--a", "x_mitre_analytic_refs": ["an--1"]},
        {"type": strategy, "id": f"{strategy}--b", "x_mitre_analytic_refs": ["an--1", "an--3"]},
    ]
    found = {an: s["id"] for an, s in BundleIndex(objects).strategy_of.items()}
    assert found == {"an--1": f"{strategy}--a", "an--3": f"{strategy}--b"}  # an--2: only a revoked one lists it


def test_skipped_objects() -> None:
    options = {"skip_status": ["Obsolete"]}
    assert skipped({"revoked": True}, {})
    assert skipped({"x_mitre_deprecated": True}, {})
    assert skipped({"x_capec_deprecated": True}, {})
    assert skipped({"x_capec_status": "Obsolete"}, options)
    assert not skipped({"x_capec_status": "Draft"}, options)
