"""A bundle's objects by id, its active relationships in both directions, each analytic's detection strategy,
and which objects are kept."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from ...mitre_lookup import bundle_domain, external_id, is_retired

StixObject = dict[str, Any]


def skipped(obj: Mapping[str, Any], options: Mapping[str, Any]) -> bool:
    """Retired, CAPEC-deprecated, or in one of the source's `skip_status` statuses."""
    statuses = options.get("skip_status") or ()
    return is_retired(obj) or bool(obj.get("x_capec_deprecated")) or obj.get("x_capec_status") in statuses


def _newest_by_name(objects: list[StixObject]) -> dict[str, StixObject]:
    """Courses of action by name: CAPEC keeps superseded copies under the same name, newest wins."""
    newest: dict[str, StixObject] = {}
    for obj in objects:
        if obj.get("type") != "course-of-action":
            continue
        name = str(obj.get("name", "")).strip()
        seen = newest.get(name)
        if seen is None or (str(obj.get("modified")), obj["id"]) > (str(seen.get("modified")), seen["id"]):
            newest[name] = obj
    return newest


def _strategies_of(objects: list[StixObject]) -> dict[str, StixObject]:
    """Analytic STIX id -> the active detection strategy that lists it (`x_mitre_analytic_refs`; first wins)."""
    found: dict[str, StixObject] = {}
    for obj in objects:
        if obj.get("type") == "x-mitre-detection-strategy" and not is_retired(obj):
            for ref in obj.get("x_mitre_analytic_refs") or ():
                found.setdefault(str(ref), obj)
    return found


class BundleIndex:
    """Objects by id, active relationships in both directions, and analytics' strategies."""

    def __init__(self, objects: list[StixObject]) -> None:
        self.by_id = {o["id"]: o for o in objects}
        self.domain = bundle_domain(objects)  # enterprise, mobile or ics: what the bundle is the matrix of
        self.attack_names = {
            external_id(o): str(o.get("name", "")) for o in objects if o.get("type") == "attack-pattern"
        }
        self.newest_by_name = _newest_by_name(objects)
        self.strategy_of = _strategies_of(objects)
        self.out: dict[str, list[StixObject]] = defaultdict(list)
        self.into: dict[str, list[StixObject]] = defaultdict(list)
        for obj in objects:
            if obj.get("type") == "relationship" and not is_retired(obj):
                self.out[str(obj.get("source_ref"))].append(obj)
                self.into[str(obj.get("target_ref"))].append(obj)

    def targets(self, stix_id: str, kind: str) -> list[tuple[StixObject, StixObject]]:
        """(relationship, active target) pairs of one relationship type leaving the object."""
        pairs = []
        for rel in self.out.get(stix_id, ()):
            target = self.by_id.get(str(rel.get("target_ref")))
            if rel.get("relationship_type") == kind and target is not None and not is_retired(target):
                pairs.append((rel, target))
        return pairs

    def sources(self, stix_id: str, kind: str) -> list[StixObject]:
        """Active objects with a relationship of one type pointing at the object."""
        found = (
            self.by_id.get(str(r.get("source_ref")))
            for r in self.into.get(stix_id, ())
            if r.get("relationship_type") == kind
        )
        return [o for o in found if o is not None and not is_retired(o)]
