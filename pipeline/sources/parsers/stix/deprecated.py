"""The ATT&CK fields and objects v18 deprecated and spec v4 removes, and which of them a bundle no longer holds.

secrag reads v18's objects for what these said (detection strategies and analytics for a technique's detection,
analytics' log sources with their data components for coverage); a technique's `x_mitre_detection` text is the only
one still read, as the fallback of a technique that no detection strategy `detects`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# A technique's fields; a data component's link to its data source; the data source objects themselves; and the
# data component `detects` relationships (a strategy's `detects` stays).
TECHNIQUE_FIELDS = (
    "x_mitre_detection",
    "x_mitre_data_sources",
    "x_mitre_permissions_required",
    "x_mitre_system_requirements",
    "x_mitre_defense_bypassed",
    "x_mitre_remote_support",
)
DATA_SOURCE_REF = "x_mitre_data_source_ref"
DATA_SOURCE = "x-mitre-data-source"
COMPONENT_DETECTS = "x-mitre-data-component detects"
DEPRECATED = (*TECHNIQUE_FIELDS, DATA_SOURCE_REF, DATA_SOURCE, COMPONENT_DETECTS)
NOTE = "attack_fields_absent"  # the parse outcome's note (and the publish's metadata) naming them


def present(objects: Iterable[Mapping[str, Any]]) -> set[str]:
    """The deprecated names the bundle still holds (a field on any object of its type, retired ones included)."""
    objects = list(objects)
    found: set[str] = set()
    components = set()
    for obj in objects:
        kind = obj.get("type")
        if kind == "attack-pattern":
            found.update(f for f in TECHNIQUE_FIELDS if f in obj)
        elif kind == "x-mitre-data-component":
            components.add(str(obj.get("id")))
            if DATA_SOURCE_REF in obj:
                found.add(DATA_SOURCE_REF)
        elif kind == DATA_SOURCE:
            found.add(DATA_SOURCE)
    for obj in objects:
        if obj.get("relationship_type") == "detects" and str(obj.get("source_ref")) in components:
            found.add(COMPONENT_DETECTS)
            break
    return found


def absent(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """The deprecated names the bundle no longer holds, in DEPRECATED's order."""
    held = present(objects)
    return [name for name in DEPRECATED if name not in held]
