"""ATT&CK procedure examples: a group's, software's or campaign's `uses` relationship to a technique, as a record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import normalize
from ...mitre_lookup import ATTACK_SOURCE, domain_of, domain_platforms, external_id, external_ref, is_retired
from ...records import Record, SourceFile
from .index import BundleIndex, StixObject
from .text import clean, compact, plain_links

# The actors whose `uses` relationships ATT&CK shows as a technique's procedure examples.
ACTORS = {"intrusion-set": "group", "malware": "software", "tool": "software", "campaign": "campaign"}


def technique_title(target: StixObject, ix: BundleIndex, tid: str) -> str:
    """ "Parent: Child" for a sub-technique (as the technique's own record is titled), the name otherwise."""
    name = str(target.get("name", "")).strip()
    if "." not in tid:
        return name
    parent = ix.attack_names.get(tid.split(".", 1)[0])
    return f"{parent}: {name}" if parent else name


def _references(rel: StixObject) -> list[dict[str, str]]:
    """The relationship's citations (source name, URL, full reference), the markers' targets."""
    refs = []
    for ref in rel.get("external_references") or ():
        if isinstance(ref, Mapping) and ref.get("source_name"):
            refs.append(compact({k: str(ref[k]).strip() for k in ("source_name", "url", "description") if ref.get(k)}))
    return refs


def _active(ix: BundleIndex, stix_id: object) -> StixObject | None:
    obj = ix.by_id.get(str(stix_id))
    return None if obj is None or is_retired(obj) else obj


def _platforms(actor: StixObject, target: StixObject, domain: str) -> tuple[str, ...]:
    """The technique's platforms, narrowed to the software's own when it names some (groups name none)."""
    technique = domain_platforms(target.get("x_mitre_platforms") or (), domain)
    own = set(domain_platforms(actor.get("x_mitre_platforms") or (), domain))
    narrowed = tuple(p for p in technique if p in own)
    return narrowed or technique


def example(rel: StixObject, ix: BundleIndex) -> tuple[StixObject, StixObject] | None:
    """(actor, technique) when the relationship is a procedure example: an active, described `uses` from
    an active group, software or campaign to an active technique, both with ATT&CK ids."""
    if rel.get("type") != "relationship" or rel.get("relationship_type") != "uses" or is_retired(rel):
        return None
    actor, target = _active(ix, rel.get("source_ref")), _active(ix, rel.get("target_ref"))
    if actor is None or target is None or actor.get("type") not in ACTORS or target.get("type") != "attack-pattern":
        return None
    if not clean(rel.get("description")) or external_id(actor) is None or external_id(target) is None:
        return None
    return actor, target


def actor_label(actor: StixObject) -> str:
    return f"{str(actor.get('name', '')).strip()} ({external_id(actor)})"


def record(rel: StixObject, ix: BundleIndex, file: SourceFile) -> Record | None:
    """The procedure example one relationship states (`example`), titled by its actor and technique; the
    description without citation markers or link targets as its body, the citations in its metadata."""
    pair = example(rel, ix)
    if pair is None:
        return None
    actor, target = pair
    actor_id, tid = str(external_id(actor)), str(external_id(target))
    actor_name, technique = str(actor.get("name", "")).strip(), technique_title(target, ix, tid)
    actor_type = ACTORS[str(actor["type"])]
    ref = external_ref(target, ATTACK_SOURCE) or {}
    domain = domain_of(target, ix.domain)  # the technique's: the example is of its matrix
    metadata: dict[str, Any] = {
        "kind": "procedure",
        "domain": domain,
        "stix_id": rel["id"],
        "actor_id": actor_id,
        "actor_name": actor_name,
        "actor_type": actor_type,
        "actor_stix_id": actor["id"],
        "technique_id": tid,
        "technique_name": technique,
        "modified": rel.get("modified"),
        "references": _references(rel),
    }
    return Record(
        source=file.source,
        upstream_id=str(rel["id"]),
        title=f"{actor_name} ({actor_id}) uses {tid} {technique}",
        body=plain_links(clean(rel.get("description"))),
        url=str(ref.get("url") or file.url_for()),
        techniques=normalize.technique_ids(tid),
        platforms=_platforms(actor, target, domain),
        tags=normalize.tags(["procedure", actor_type]),
        metadata=compact(metadata),
        path=file.rel,
    )
