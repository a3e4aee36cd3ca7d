"""CAPEC attack patterns and courses of action as records."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ... import normalize
from ...mitre_lookup import external_id, external_ref
from ...records import Record, SourceFile
from .index import BundleIndex, StixObject, skipped
from .text import clean, compact, section

# (label, field after `x_capec_`) of the pattern fields shown as labelled sections, in body order.
_SECTIONS = (
    ("Alternate terms", "alternate_terms"),
    ("Abstraction", "abstraction"),
    ("Likelihood of attack", "likelihood_of_attack"),
    ("Typical severity", "typical_severity"),
    ("Prerequisites", "prerequisites"),
    ("Skills required", "skills_required"),
    ("Resources required", "resources_required"),
    ("Consequences", "consequences"),
)
_COA_NAME = re.compile(r"coa-(\d+)-")


def attack_ids(obj: Mapping[str, Any], source_name: str) -> tuple[str, ...]:
    """ATT&CK mappings; upstream writes them with and without the T (`1574.010`, `T1499`)."""
    ids = []
    for ref in obj.get("external_references") or ():
        if isinstance(ref, Mapping) and ref.get("source_name") == source_name and ref.get("external_id"):
            raw = str(ref["external_id"]).strip()
            ids.append(raw if raw[:1].upper() == "T" else f"T{raw}")
    return normalize.technique_ids(ids)


def _cwes(obj: StixObject) -> list[str]:
    refs = obj.get("external_references") or ()
    return [str(r["external_id"]) for r in refs if r.get("source_name") == "cwe" and r.get("external_id")]


def _parents(obj: StixObject, ix: BundleIndex) -> list[str]:
    """CAPEC ids of the patterns this one is a child of."""
    parents = [external_id(ix.by_id[p], "capec") for p in obj.get("x_capec_child_of_refs") or () if p in ix.by_id]
    return [p for p in parents if p]


def _pattern(obj: StixObject, ix: BundleIndex, file: SourceFile, attack_source: str) -> Record | None:
    ref = external_ref(obj, "capec")
    if ref is None:
        return None
    parts = [
        clean(obj.get("description"), True),
        clean(obj.get("x_capec_extended_description"), True),
        *(section(label, obj.get(f"x_capec_{key}"), True) for label, key in _SECTIONS),
        clean(obj.get("x_capec_execution_flow"), True),
        section("Example instances", obj.get("x_capec_example_instances"), True),
    ]
    metadata = {
        "kind": "attack-pattern",
        "stix_id": obj["id"],
        "status": obj.get("x_capec_status"),
        "abstraction": obj.get("x_capec_abstraction"),
        "severity": obj.get("x_capec_typical_severity"),
        "likelihood": obj.get("x_capec_likelihood_of_attack"),
        "cwes": _cwes(obj),
        "child_of": _parents(obj, ix),
        "version": obj.get("x_capec_version"),
    }
    return Record(
        source=file.source,
        upstream_id=str(ref["external_id"]),
        title=str(obj.get("name", "")),
        body=normalize.join_text(*parts),
        url=str(ref.get("url") or file.url_for()),
        techniques=attack_ids(obj, attack_source),
        platforms=(),
        tags=normalize.tags(obj.get("x_capec_domains") or ()),
        metadata=compact(metadata),
        path=file.rel,
    )


def _kept(obj: StixObject, ix: BundleIndex, name: str, patterns: list[StixObject]) -> bool:
    """False for a superseded copy, or one that only mitigates retired patterns."""
    return bool(name) and ix.newest_by_name.get(name) is obj and not (ix.out.get(obj["id"]) and not patterns)


def _main_pattern(name: str, patterns: list[StixObject]) -> StixObject | None:
    """The pattern a course of action was written for (`coa-102-0` -> CAPEC-102), else its first."""
    match = _COA_NAME.match(name)
    own = next((p for p in patterns if match and external_id(p, "capec") == f"CAPEC-{match.group(1)}"), None)
    return own or (patterns[0] if patterns else None)


def _mitigation_title(name: str, main: StixObject | None, main_ref: Mapping[str, Any] | None) -> str:
    if main and main_ref:
        return f"Mitigation for {main_ref['external_id']}: {main.get('name')}"
    return f"CAPEC mitigation {name}"


def _mitigation(obj: StixObject, ix: BundleIndex, file: SourceFile, attack_source: str) -> Record | None:
    """A course of action, titled after the pattern it was written for."""
    name = str(obj.get("name", "")).strip()
    patterns = [t for _, t in ix.targets(obj["id"], "mitigates") if not skipped(t, file.options)]
    if not _kept(obj, ix, name, patterns):
        return None
    main = _main_pattern(name, patterns)
    main_ref = external_ref(main, "capec") if main else None
    mitigated = [f"{external_id(p, 'capec')} {p.get('name')}" for p in patterns]
    return Record(
        source=file.source,
        upstream_id=name,
        title=_mitigation_title(name, main, main_ref),
        body=normalize.join_text(clean(obj.get("description"), True), section("Mitigates", mitigated)),
        url=str(main_ref.get("url")) if main_ref else file.url_for(),
        techniques=normalize.technique_ids(t for p in patterns for t in attack_ids(p, attack_source)),
        tags=("mitigation",),
        path=file.rel,
        metadata=compact(
            {"kind": "mitigation", "stix_id": obj["id"], "mitigates": [external_id(p, "capec") for p in patterns]}
        ),
    )


def record(obj: StixObject, ix: BundleIndex, file: SourceFile) -> Record | None:
    """The record of one CAPEC attack pattern or course of action; None when it is not kept."""
    attack_source = str(file.options.get("attack_source", "ATTACK"))
    if obj["type"] == "course-of-action":
        return _mitigation(obj, ix, file, attack_source)
    return _pattern(obj, ix, file, attack_source)
