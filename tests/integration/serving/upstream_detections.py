"""ATT&CK's detection strategies and analytics counted straight from the three bundles with plain JSON, not the
parsers: per domain the strategies and analytics by id, each technique's analytics and each analytic's log
sources. The detections check compares what the API answers with these.

The parser's rules are applied here, each named: revoked and deprecated objects and relationships are history
upstream (pipeline/sources/mitre_lookup.py is_retired), an analytic counts when an active strategy lists it
(pipeline/sources/parsers/stix/detections.py), and a strategy's technique is the active target of its `detects`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOMAINS = ("enterprise", "mobile", "ics")
ATTACK = "mitre-attack"
Bundles = dict[str, list[dict[str, Any]]]  # domain -> the bundle's objects


@dataclass
class Detections:
    """What a store of ATT&CK's detection strategies and analytics holds, by id."""

    strategies: dict[str, str] = field(default_factory=dict)  # DET id -> domain
    analytics: dict[str, str] = field(default_factory=dict)  # AN id -> domain
    by_technique: dict[str, set[str]] = field(default_factory=dict)  # technique id -> its analytics' AN ids
    log_sources: dict[str, int] = field(default_factory=dict)  # AN id -> how many log sources it lists


def bundles(root: Path) -> Bundles:
    """The objects of each domain's bundle in the ATT&CK snapshot folder."""
    return {
        domain: json.loads((root / f"{domain}-attack/{domain}-attack.json").read_text(encoding="utf-8"))["objects"]
        for domain in DOMAINS
    }


def without(found: Bundles, stix_id: str) -> Bundles:
    """The bundles less one object."""
    return {domain: [o for o in objects if o["id"] != stix_id] for domain, objects in found.items()}


def without_log_source(found: Bundles, stix_id: str) -> Bundles:
    """The bundles with one analytic's first log source left out."""

    def drop(obj: dict[str, Any]) -> dict[str, Any]:
        if obj["id"] != stix_id:
            return obj
        return {**obj, "x_mitre_log_source_references": obj["x_mitre_log_source_references"][1:]}

    return {domain: [drop(o) for o in objects] for domain, objects in found.items()}


def attack_id(obj: Mapping[str, Any]) -> str | None:
    for ref in obj.get("external_references") or ():
        if ref.get("source_name") == ATTACK and ref.get("external_id"):
            return str(ref["external_id"])
    return None


def _active(obj: Mapping[str, Any]) -> bool:
    return not obj.get("revoked") and not obj.get("x_mitre_deprecated")


def _detected(objects: list[dict[str, Any]], by_id: Mapping[str, dict[str, Any]]) -> dict[str, set[str]]:
    """Strategy STIX id -> the active techniques its active `detects` relationships name."""
    found: dict[str, set[str]] = {}
    for rel in objects:
        if rel.get("type") != "relationship" or rel.get("relationship_type") != "detects" or not _active(rel):
            continue
        target = by_id.get(rel["target_ref"])
        if target is not None and target.get("type") == "attack-pattern" and _active(target) and attack_id(target):
            found.setdefault(rel["source_ref"], set()).add(str(attack_id(target)))
    return found


def count(found: Bundles) -> Detections:
    """Every active strategy and every analytic an active strategy lists, per domain."""
    out = Detections()
    for domain, objects in found.items():
        by_id = {o["id"]: o for o in objects}
        detected = _detected(objects, by_id)
        for strategy in objects:
            if strategy.get("type") != "x-mitre-detection-strategy" or not _active(strategy):
                continue
            out.strategies[str(attack_id(strategy))] = domain
            for ref in strategy.get("x_mitre_analytic_refs") or ():
                analytic = by_id.get(ref)
                if analytic is None or not _active(analytic) or attack_id(analytic) is None:
                    continue
                an = str(attack_id(analytic))
                out.analytics[an] = domain
                out.log_sources[an] = len(analytic.get("x_mitre_log_source_references") or ())
                for technique in detected.get(strategy["id"], ()):
                    out.by_technique.setdefault(technique, set()).add(an)
    return out


def disagreements(answer: Detections, upstream: Detections, limit: int = 10) -> list[str]:
    """Where the API's answer and the upstream count differ (at most `limit` lines per kind of figure)."""
    found: list[str] = []
    for name in ("strategies", "analytics", "log_sources"):
        got, wanted = getattr(answer, name), getattr(upstream, name)
        diff = sorted(k for k in got.keys() | wanted.keys() if got.get(k) != wanted.get(k))
        found += [f"{name} {k}: api {got.get(k)!r}, upstream {wanted.get(k)!r}" for k in diff[:limit]]
    for domain in DOMAINS:
        for name in ("strategies", "analytics"):
            got = sum(1 for d in getattr(answer, name).values() if d == domain)
            wanted = sum(1 for d in getattr(upstream, name).values() if d == domain)
            if got != wanted:
                found.append(f"{domain} {name}: api {got}, upstream {wanted}")
    techniques = sorted(answer.by_technique.keys() | upstream.by_technique.keys())
    for t in [t for t in techniques if answer.by_technique.get(t) != upstream.by_technique.get(t)][:limit]:
        got, wanted = sorted(answer.by_technique.get(t, ())), sorted(upstream.by_technique.get(t, ()))
        found.append(f"analytics of {t}: api {got}, upstream {wanted}")
    return found
