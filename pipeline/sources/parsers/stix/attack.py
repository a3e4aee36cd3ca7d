"""ATT&CK objects (techniques, tactics, groups, software, mitigations, campaigns) as records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from secrag.attack_domains import PROCEDURE_SOURCES

from ... import normalize
from ...mitre_lookup import (
    ATTACK_SOURCE,
    domain_of,
    domain_platforms,
    external_id,
    external_ref,
    is_retired,
    tactics_of,
)
from ...records import Record, SourceFile
from .detections import technique_links
from .index import BundleIndex, StixObject
from .procedures import actor_label, example
from .text import clean, compact, section

KINDS = {
    "attack-pattern": "technique",
    "intrusion-set": "group",
    "malware": "software",
    "tool": "software",
    "course-of-action": "mitigation",
    "campaign": "campaign",
    "x-mitre-tactic": "tactic",
}
_DEFAULT_RELATED_LIMIT = 250


@dataclass(frozen=True)
class _Shape:
    """What depends on the object's kind: its title, parent, techniques and body sections."""

    kind: str
    title: str
    techniques: tuple[str, ...]
    parts: Sequence[str]
    parent: str | None = None
    # A technique's procedure examples (the records of mitre_attack_procedures) and their actors.
    procedures: int = 0
    used_by: tuple[str, ...] = ()
    # Its detection strategies ({id, name}) and their analytics' ids (the records of mitre_attack_detections).
    strategies: tuple[dict[str, str], ...] = ()
    analytics: tuple[str, ...] = ()


def _parent(obj: StixObject, ix: BundleIndex, aid: str, name: str) -> tuple[str | None, str]:
    """(parent id, "Parent: Child" title) of a sub-technique; the id prefix when no link says."""
    linked = [t for _, t in ix.targets(obj["id"], "subtechnique-of")]
    parent = external_id(linked[0]) if linked else aid.split(".", 1)[0]
    parent_name = linked[0].get("name") if linked else ix.attack_names.get(parent)
    return parent, f"{parent_name}: {name}" if parent_name else name


def _technique(obj: StixObject, ix: BundleIndex, aid: str, name: str, tactics: tuple[str, ...]) -> _Shape:
    kind, title = "technique", name
    parent: str | None = None
    if obj.get("x_mitre_is_subtechnique") or "." in aid:
        kind = "sub-technique"
        parent, title = _parent(obj, ix, aid, name)
    mitigations = sorted(
        {f"{external_id(m)} {m.get('name')}" for m in ix.sources(obj["id"], "mitigates") if external_id(m)}
    )
    strategies, analytics = technique_links(obj, ix)
    parts = [
        section("Tactics", ", ".join(tactics)),
        section("Platforms", ", ".join(obj.get("x_mitre_platforms") or ())),
        clean(obj.get("description")),
        # v18's detection strategies say how to detect it; the deprecated free text only when none does.
        section("Detection", None if strategies else obj.get("x_mitre_detection")),
        section("Mitigations", mitigations),
        section("Detection strategies", [f"{s['id']} {s['name']}" for s in strategies]),
    ]
    examples = [pair for pair in (example(rel, ix) for rel in ix.into.get(obj["id"], ())) if pair is not None]
    used_by = tuple(sorted({actor_label(actor) for actor, _ in examples}))
    return _Shape(
        kind,
        title,
        normalize.technique_ids(aid),
        parts,
        parent,
        len(examples),
        used_by,
        tuple(strategies),
        tuple(analytics),
    )


def _related(obj: StixObject, ix: BundleIndex, limit: int) -> tuple[str, ...]:
    """Techniques a group/software/campaign uses or a mitigation mitigates (bounded)."""
    kind = "mitigates" if obj.get("type") == "course-of-action" else "uses"
    ids = {external_id(t) for _, t in ix.targets(obj["id"], kind) if t.get("type") == "attack-pattern"}
    return normalize.technique_ids(sorted(i for i in ids if i))[:limit]


def _user(obj: StixObject, ix: BundleIndex, name: str, aliases: list[Any], limit: int) -> _Shape:
    """A group, software, mitigation or campaign: what it uses or mitigates."""
    kind = KINDS[obj["type"]]
    parts = [
        section("Type", obj["type"] if kind == "software" else ""),
        section("Aliases", ", ".join(aliases)),
        section("Platforms", ", ".join(obj.get("x_mitre_platforms") or ())),
        section("First seen", obj.get("first_seen")),
        section("Last seen", obj.get("last_seen")),
        clean(obj.get("description")),
    ]
    return _Shape(kind, name, _related(obj, ix, limit), parts)


def _tactic(obj: StixObject, ix: BundleIndex, name: str) -> tuple[_Shape, tuple[str, ...]]:
    """A tactic (its short name is what techniques' kill-chain phases say): its description and active techniques."""
    shortname = str(obj.get("x_mitre_shortname") or "").strip()
    techniques = sorted(
        f"{tid} {technique.get('name')}"
        for technique in ix.by_id.values()
        if technique.get("type") == "attack-pattern"
        and not is_retired(technique)
        and shortname in tactics_of(technique)
        and (tid := external_id(technique))
    )
    parts = [section("Short name", shortname), clean(obj.get("description")), section("Techniques", techniques)]
    return _Shape("tactic", name, (), parts), (shortname,) if shortname else ()


def _metadata(
    obj: StixObject, shape: _Shape, tactics: tuple[str, ...], aliases: list[Any], domain: str
) -> dict[str, Any]:
    metadata = {
        "kind": shape.kind,
        "domain": domain,
        "stix_id": obj["id"],
        "version": obj.get("x_mitre_version"),
        "modified": obj.get("modified"),
        "tactics": list(tactics),
        "aliases": aliases,
        "platforms": list(obj.get("x_mitre_platforms") or ()),
    }
    if shape.parent:
        metadata["parent"] = shape.parent
    if shape.procedures:
        # Who used it; how is told by the procedure examples, the documents of mitre_attack_procedures
        # labelled with this technique (a search filtered on that source and technique lists them).
        metadata["procedure_examples"] = {"source": PROCEDURE_SOURCES[domain], "count": shape.procedures}
        metadata["used_by"] = list(shape.used_by)
    metadata["detection_strategies"] = list(shape.strategies)
    metadata["analytics"] = list(shape.analytics)
    return compact(metadata)


def record(obj: StixObject, ix: BundleIndex, file: SourceFile) -> Record | None:
    """The record of one ATT&CK object; None when it has no ATT&CK id."""
    ref = external_ref(obj, ATTACK_SOURCE)
    if ref is None:
        return None
    aid, name = str(ref["external_id"]).strip(), str(obj.get("name", ""))
    aliases = [a for a in (obj.get("aliases") or obj.get("x_mitre_aliases") or ()) if a != name]
    tactics = tactics_of(obj)
    domain = domain_of(obj, ix.domain)
    if KINDS[obj["type"]] == "technique":
        shape = _technique(obj, ix, aid, name, tactics)
    elif KINDS[obj["type"]] == "tactic":
        shape, tactics = _tactic(obj, ix, name)
    else:
        shape = _user(obj, ix, name, aliases, int(file.options.get("related_limit", _DEFAULT_RELATED_LIMIT)))
    return Record(
        source=file.source,
        upstream_id=aid,
        title=shape.title,
        body=normalize.join_text(*shape.parts),
        url=str(ref.get("url") or file.url_for()),
        techniques=shape.techniques,
        platforms=domain_platforms(obj.get("x_mitre_platforms") or (), domain),
        tags=normalize.tags([shape.kind, *tactics]),
        metadata=_metadata(obj, shape, tactics, aliases, domain),
        path=file.rel,
    )
