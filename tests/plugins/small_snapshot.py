"""A small real-data snapshot for the graph tests: a few CAR analytics, HijackLibs entries and the
ATT&CK techniques they reference (cut from the real Enterprise bundle)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.plugins.upstream import SNAPSHOT

CAR_FILES = 25
HIJACKLIBS_FILES = 40
_TECHNIQUE = re.compile(r"\bT\d{4}(?:\.\d{3})?\b")


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def _attack_subset(bundle: Path, wanted: set[str]) -> dict:
    data = json.loads(bundle.read_bytes())
    objects = data["objects"]

    def ext_id(obj: dict) -> str | None:
        for ref in obj.get("external_references") or ():
            if ref.get("source_name") == "mitre-attack":
                return ref.get("external_id")
        return None

    wanted = wanted | {t.split(".")[0] for t in wanted}
    patterns = {o["id"]: o for o in objects if o.get("type") == "attack-pattern" and ext_id(o) in wanted}
    keep = list(patterns.values())
    keep += [
        o
        for o in objects
        if o.get("type") == "relationship"
        and o.get("relationship_type") == "subtechnique-of"
        and o.get("source_ref") in patterns
        and o.get("target_ref") in patterns
    ]
    keep += [o for o in objects if o.get("type") in {"x-mitre-tactic", "marking-definition", "identity"}]
    return {**{k: v for k, v in data.items() if k != "objects"}, "objects": keep}


def build_small_snapshot(target: Path) -> Path:
    """Write the subset snapshot under target (laid out like ../shared/upstream); returns target."""
    referenced: set[str] = set()
    car = sorted((SNAPSHOT / "mitre_car" / "analytics").glob("*.yaml"))[:CAR_FILES]
    for path in car:
        _copy(path, target / "mitre_car" / "analytics" / path.name)
        referenced |= set(_TECHNIQUE.findall(path.read_text(encoding="utf-8")))
    hijack_root = SNAPSHOT / "hijacklibs"
    for path in sorted((hijack_root / "yml").rglob("*.yml"))[:HIJACKLIBS_FILES]:
        _copy(path, target / "hijacklibs" / path.relative_to(hijack_root))
    referenced |= {"T1574.001", "T1574.002"}
    rel = Path("enterprise-attack") / "enterprise-attack.json"
    dest = target / "mitre_attack" / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(_attack_subset(SNAPSHOT / "mitre_attack" / rel, referenced)), encoding="utf-8")
    return target
