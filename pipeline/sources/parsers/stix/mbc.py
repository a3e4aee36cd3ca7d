"""MBC objects (behaviors, methods, objectives, malware) as records, with their ATT&CK techniques."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ... import normalize
from ...records import Record, SourceFile
from .index import BundleIndex, StixObject
from .text import compact, section

KINDS = {
    "malware-behavior": "behavior",
    "malware-method": "method",
    "malware-objective": "objective",
    "malware": "malware",
}
# MBC's E-ids extend the ATT&CK technique of the same number (E1055.012 ~ T1055.012, E1643.m02 ~ T1643).
_ENHANCED = re.compile(r"^E(\d{4})(?:\.(\d{3}))?")
_MAX_LITERAL = 100_000


@dataclass(frozen=True)
class _Shape:
    """What depends on the object's kind; `url` is used only when the object has none of its own."""

    title: str
    url: str = ""
    attack: Sequence[object] = ()  # values that name ATT&CK techniques
    parts: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    platforms: tuple[str, ...] = ()


def _literal(value: object) -> object:
    """MBC stores some malware fields as Python-literal strings ("['Windows']"); never eval them."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{", "(") and len(value) < _MAX_LITERAL:
        try:
            return ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return value
    return value


def _defn(obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(obj_defn, extension fields): top level for MBC's own types, in an extension on `malware`."""
    defn = _literal(obj.get("obj_defn"))
    if isinstance(defn, dict):
        return defn, {}
    for ext in (obj.get("extensions") or {}).values():
        ext = _literal(ext)
        if isinstance(ext, dict) and "obj_defn" in ext:
            inner = _literal(ext["obj_defn"])
            return (inner if isinstance(inner, dict) else {}), {k: _literal(v) for k, v in ext.items()}
    return {}, {}


def _mbc_id(obj: Mapping[str, Any]) -> str:
    return str(_defn(obj)[0].get("external_id") or "").strip()


def _attack(mbc_id: str) -> str | None:
    """The ATT&CK technique an enhanced MBC id extends, if it is one."""
    match = _ENHANCED.match(mbc_id)
    if not match:
        return None
    return f"T{match.group(1)}.{match.group(2)}" if match.group(2) else f"T{match.group(1)}"


def _method(obj: StixObject, ix: BundleIndex, mbc_id: str, name: str) -> _Shape:
    """A method, titled and linked after the behavior it implements."""
    behavior = ix.by_id.get(str(obj.get("behavior_ref")), {})
    bdefn = _defn(behavior)[0]
    return _Shape(
        title=f"{behavior.get('name')}: {name}" if behavior.get("name") else name,
        url=str(bdefn.get("url") or ""),
        attack=[_attack(mbc_id) or _attack(str(bdefn.get("external_id") or ""))],
        parts=[section("Behavior", f"{bdefn.get('external_id', '')} {behavior.get('name', '')}")],
        metadata={"behavior": bdefn.get("external_id")},
    )


def _behavior(obj: StixObject, ix: BundleIndex, mbc_id: str, name: str) -> _Shape:
    """A behavior with its objectives, methods and detection rules."""
    objectives = [str(ix.by_id[o].get("name")) for o in obj.get("objective_refs") or () if o in ix.by_id]
    methods = sorted(
        f"{_mbc_id(m)} {m.get('name')}"
        for m in ix.by_id.values()
        if m.get("type") == "malware-method" and m.get("behavior_ref") == obj["id"]
    )
    rules = [r.get("rule_name") for r in obj.get("detection_rules") or () if isinstance(r, Mapping)]
    return _Shape(
        title=name,
        parts=[
            section("Objectives", ", ".join(objectives)),
            section("Methods", methods),
            section("Detection rules", rules),
        ],
        metadata={"objectives": objectives, "detection_rules": rules[:20], "tags": obj.get("tags")},
    )


def _objective(obj: StixObject, ix: BundleIndex, mbc_id: str, name: str) -> _Shape:
    return _Shape(title=name)


def _malware_attack(obj: StixObject, ix: BundleIndex) -> list[object]:
    """Techniques of the MBC behaviors the malware uses, and of the ATT&CK techniques it uses."""
    attack: list[object] = [_attack(_mbc_id(t)) for _, t in ix.targets(obj["id"], "uses")]
    # ATT&CK targets are not in the MBC bundle; the relationship text names the technique id.
    return attack + [
        r.get("description")
        for r in ix.out.get(obj["id"], ())
        if r.get("relationship_type") == "uses" and str(r.get("target_ref")).startswith("attack-pattern--")
    ]


def _malware(obj: StixObject, ix: BundleIndex, mbc_id: str, name: str) -> _Shape:
    """A malware family or sample with its aliases, platforms, year and behaviors."""
    ext = _defn(obj)[1]
    behaviors = sorted({f"{_mbc_id(t)} {t.get('name')}" for _, t in ix.targets(obj["id"], "uses") if _mbc_id(t)})
    aliases = [str(a) for a in normalize.as_list(_literal(obj.get("aliases"))) if str(a) != name]
    return _Shape(
        title=name,
        attack=_malware_attack(obj, ix),
        parts=[
            section("Aliases", ", ".join(aliases)),
            section("Platforms", ", ".join(map(str, normalize.as_list(ext.get("platforms"))))),
            section("Year", ext.get("year")),
            section("Behaviors", behaviors),
        ],
        metadata={"aliases": aliases, "year": str(ext.get("year") or "") or None, "is_family": obj.get("is_family")},
        platforms=normalize.platforms(normalize.as_list(ext.get("platforms"))),
    )


_SHAPES: dict[str, Callable[[StixObject, BundleIndex, str, str], _Shape]] = {
    "method": _method,
    "behavior": _behavior,
    "objective": _objective,
    "malware": _malware,
}


def record(obj: StixObject, ix: BundleIndex, file: SourceFile) -> Record:
    """The record of one MBC object; its STIX id stands in when it has no MBC id."""
    defn = _defn(obj)[0]
    kind = KINDS[obj["type"]]
    mbc_id = str(defn.get("external_id") or "").strip() or obj["id"]
    description = str(defn.get("description") or "").strip()
    shape = _SHAPES[kind](obj, ix, mbc_id, str(obj.get("name", "")).strip())
    metadata = {"kind": kind, "stix_id": obj["id"], "version": obj.get("obj_version"), **shape.metadata}
    attack = [description, _attack(mbc_id), *shape.attack]
    return Record(
        source=file.source,
        upstream_id=mbc_id,
        title=shape.title,
        body=normalize.join_text(description if description != "[1]" else "", *shape.parts),
        url=str(defn.get("url") or "") or shape.url or file.url_for(),
        techniques=normalize.technique_ids(a for a in attack if a),
        platforms=shape.platforms,
        tags=normalize.tags([kind]),
        metadata=compact(metadata),
        path=file.rel,
    )
