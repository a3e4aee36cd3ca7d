"""ATT&CK's Mobile and ICS matrices counted from their bundles with plain JSON (none of secrag's parsing): active
techniques, each tactic's techniques, each group's techniques. What test_domains_upstream.py compares the API with."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOMAINS = ("enterprise", "mobile", "ics")


@dataclass
class Matrix:
    """One domain's active techniques, its tactics' techniques and its groups' techniques, by ATT&CK id."""

    techniques: set[str] = field(default_factory=set)
    by_tactic: dict[str, set[str]] = field(default_factory=dict)
    by_group: dict[str, set[str]] = field(default_factory=dict)


def _live(obj: dict[str, Any]) -> bool:
    return not obj.get("revoked") and not obj.get("x_mitre_deprecated")


def _attack_id(obj: dict[str, Any]) -> str | None:
    for ref in obj.get("external_references") or ():
        if ref.get("source_name") == "mitre-attack" and ref.get("external_id"):
            return str(ref["external_id"])
    return None


def matrix(attack: Path, domain: str) -> Matrix:
    """The domain's bundle under ATT&CK's snapshot folder, counted."""
    objects = json.loads((attack / f"{domain}-attack" / f"{domain}-attack.json").read_text(encoding="utf-8"))["objects"]
    by_id = {o["id"]: o for o in objects}
    out = Matrix()
    for obj in objects:
        tid = _attack_id(obj)
        if obj["type"] != "attack-pattern" or not _live(obj) or tid is None:
            continue
        out.techniques.add(tid)
        for phase in obj.get("kill_chain_phases") or ():
            out.by_tactic.setdefault(phase["phase_name"], set()).add(tid)
    for rel in objects:
        if rel["type"] != "relationship" or rel["relationship_type"] != "uses" or not _live(rel):
            continue
        actor, target = by_id.get(rel["source_ref"]), by_id.get(rel["target_ref"])
        if actor is None or target is None or actor["type"] != "intrusion-set" or target["type"] != "attack-pattern":
            continue
        gid, tid = _attack_id(actor), _attack_id(target)
        if _live(actor) and _live(target) and gid and tid:
            out.by_group.setdefault(gid, set()).add(tid)
    return out
