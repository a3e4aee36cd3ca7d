"""ATT&CK technique table from a STIX bundle: names, "Parent: Child" names, tactics, redirects, domains."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secrag.attack_domains import DEFAULT_DOMAIN, domain_names
from secrag.errors import ParseError

from . import normalize

ATTACK_SOURCE = "mitre-attack"
# Mobile techniques revoked long ago and ICS techniques deprecated long ago carry their id under their matrix's old
# name only (T1425, T0850, ...; ids no other domain uses).
_OLD_SOURCES = ("mitre-mobile-attack", "mitre-ics-attack")
_KILL_CHAINS = (ATTACK_SOURCE, *_OLD_SOURCES)  # each domain's kill chain, by the name its techniques give it
# ATT&CK platform names the shared vocabulary does not know, mapped onto its terms; PRE has no term.
_PLATFORM_ALIASES = {"office suite": "office365", "identity provider": "entra_id", "pre": None}
_MAX_REDIRECT_HOPS = 10


@dataclass(frozen=True)
class MitreTechnique:
    """One ATT&CK technique or sub-technique, active or kept as a redirect."""

    id: str
    name: str
    full_name: str  # "Parent: Child" for sub-techniques, the name otherwise
    tactics: tuple[str, ...]
    platforms: tuple[str, ...]
    parent: str | None
    revoked: bool
    deprecated: bool
    replaced_by: str | None
    domain: str = DEFAULT_DOMAIN  # enterprise, mobile or ics (secrag/attack_domains.py)

    @property
    def active(self) -> bool:
        return not (self.revoked or self.deprecated)


def bundle_objects(data: bytes | str) -> list[dict[str, Any]]:
    """The objects of a STIX 2.0 or 2.1 bundle; ParseError when the file is not one."""
    try:
        bundle = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParseError(f"invalid JSON: {exc}") from exc
    if not isinstance(bundle, dict) or bundle.get("type") != "bundle":
        raise ParseError("not a STIX bundle (no top-level type: bundle)")
    objects = bundle.get("objects")
    if not isinstance(objects, list):
        raise ParseError("STIX bundle has no objects list")
    return [o for o in objects if isinstance(o, dict) and isinstance(o.get("id"), str)]


def external_ref(obj: Mapping[str, Any], source_name: str) -> Mapping[str, Any] | None:
    """The first external reference of the object from the given source."""
    for ref in obj.get("external_references") or ():
        if isinstance(ref, Mapping) and ref.get("source_name") == source_name and ref.get("external_id"):
            return ref
    return None


def external_id(obj: Mapping[str, Any], source_name: str = ATTACK_SOURCE) -> str | None:
    ref = external_ref(obj, source_name)
    return str(ref["external_id"]).strip() if ref else None


def technique_id(obj: Mapping[str, Any]) -> str | None:
    """An attack-pattern's ATT&CK id (under its matrix's old name for techniques retired long ago)."""
    return external_id(obj) or next((i for name in _OLD_SOURCES if (i := external_id(obj, name))), None)


def is_retired(obj: Mapping[str, Any]) -> bool:
    """Revoked or deprecated objects are kept upstream only as history."""
    return bool(obj.get("revoked")) or bool(obj.get("x_mitre_deprecated"))


def attack_platforms(values: Iterable[object]) -> tuple[str, ...]:
    """ATT&CK platform names onto the shared platform vocabulary."""
    mapped: list[object] = []
    for value in values:
        key = str(value).strip().lower()
        mapped.append(_PLATFORM_ALIASES[key] if key in _PLATFORM_ALIASES else value)
    return normalize.platforms(v for v in mapped if v is not None)


def _own_domains(obj: Mapping[str, Any]) -> tuple[str, ...]:
    values = obj.get("x_mitre_domains") or ()
    return domain_names([values] if isinstance(values, str) else values)


def bundle_domain(objects: Iterable[Mapping[str, Any]]) -> str:
    """The domain of a bundle: the one its single-domain objects name most often (Enterprise when none does)."""
    counts = Counter(own[0] for own in map(_own_domains, objects) if len(own) == 1)
    return counts.most_common(1)[0][0] if counts else DEFAULT_DOMAIN


def domain_of(obj: Mapping[str, Any], bundle: str) -> str:
    """The domain an object of a bundle is recorded in: the bundle's when the object names it (a group shared by
    Enterprise and Mobile is in both bundles, a document in each), else the first it names, else the bundle's."""
    own = _own_domains(obj)
    return bundle if bundle in own or not own else own[0]


def domain_platforms(values: Iterable[object], domain: str) -> tuple[str, ...]:
    """ATT&CK platform names onto the shared vocabulary; ICS's own (Control Server, Field Controller/RTU/PLC/IED,
    None, ...) have no term there, so everything of the ICS domain is on the platform `ics`."""
    mapped = attack_platforms(values)
    return tuple(sorted({*mapped, "ics"})) if domain == "ics" else mapped


def tactics_of(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The tactics (short names) of a technique's ATT&CK kill-chain phases; Mobile and ICS name their own chains."""
    phases = obj.get("kill_chain_phases") or ()
    return tuple(
        p["phase_name"]
        for p in phases
        if isinstance(p, Mapping) and p.get("kill_chain_name") in _KILL_CHAINS and p.get("phase_name")
    )


def relationship_map(objects: Iterable[Mapping[str, Any]], kind: str) -> dict[str, str]:
    """source_ref -> target_ref for one relationship type (first wins, retired relationships skipped)."""
    out: dict[str, str] = {}
    for obj in objects:
        if obj.get("type") == "relationship" and obj.get("relationship_type") == kind and not is_retired(obj):
            out.setdefault(str(obj.get("source_ref")), str(obj.get("target_ref")))
    return out


def _replacement(stix_id: str, revoked_by: Mapping[str, str], patterns: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Follow revoked-by links to the first technique that is not itself revoked."""
    current, hops = revoked_by.get(stix_id), 0
    while current and hops < _MAX_REDIRECT_HOPS:
        target = patterns.get(current)
        if target is None:
            return None
        if not target.get("revoked") or current not in revoked_by:
            return technique_id(target)
        current, hops = revoked_by[current], hops + 1
    return None


def _parent(
    stix_id: str,
    obj: Mapping[str, Any],
    tid: str,
    patterns: Mapping[str, Mapping[str, Any]],
    parent_of: Mapping[str, str],
) -> str | None:
    """A sub-technique's parent id: the `subtechnique-of` target, else the id's prefix; None for techniques."""
    if "." not in tid and not obj.get("x_mitre_is_subtechnique"):
        return None
    linked = patterns.get(parent_of.get(stix_id, ""))
    return technique_id(linked) if linked else tid.split(".", 1)[0]


def techniques_from_objects(objects: list[dict[str, Any]]) -> list[MitreTechnique]:
    """Every attack-pattern with an ATT&CK id, active and retired, sorted by id, each with its domain."""
    patterns = {o["id"]: o for o in objects if o.get("type") == "attack-pattern" and technique_id(o)}
    names = {technique_id(o): str(o.get("name", "")) for o in patterns.values()}
    parent_of = relationship_map(objects, "subtechnique-of")
    revoked_by = relationship_map(objects, "revoked-by")
    bundle = bundle_domain(objects)
    out = [_technique(stix_id, patterns, names, parent_of, revoked_by, bundle) for stix_id in patterns]
    return sorted(out, key=lambda t: t.id)


def _technique(
    stix_id: str,
    patterns: Mapping[str, Mapping[str, Any]],
    names: Mapping[str | None, str],
    parent_of: Mapping[str, str],
    revoked_by: Mapping[str, str],
    bundle: str,
) -> MitreTechnique:
    obj = patterns[stix_id]
    domain = domain_of(obj, bundle)
    tid = str(technique_id(obj))
    name = str(obj.get("name", "")).strip()
    parent = _parent(stix_id, obj, tid, patterns, parent_of)
    parent_name = names.get(parent) if parent else None
    return MitreTechnique(
        id=tid,
        name=name,
        full_name=f"{parent_name}: {name}" if parent_name else name,
        tactics=tactics_of(obj),
        platforms=domain_platforms(obj.get("x_mitre_platforms") or (), domain),
        parent=parent if parent != tid else None,
        revoked=bool(obj.get("revoked")),
        deprecated=bool(obj.get("x_mitre_deprecated")),
        replaced_by=_replacement(stix_id, revoked_by, patterns) if obj.get("revoked") else None,
        domain=domain,
    )


def techniques_from_bundle(path_or_bytes: Path | str | bytes) -> list[MitreTechnique]:
    """Every technique and sub-technique of an ATT&CK STIX bundle (a path, or the bundle bytes)."""
    data = path_or_bytes if isinstance(path_or_bytes, bytes) else Path(path_or_bytes).read_bytes()
    return techniques_from_objects(bundle_objects(data))
