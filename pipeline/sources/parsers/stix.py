"""STIX 2.0/2.1 bundles (ATT&CK, CAPEC, MBC) to records; `options.scheme` picks the id scheme."""

from __future__ import annotations

import ast
import html
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from secrag.errors import ParseError

from .. import normalize
from ..mitre_lookup import (
    ATTACK_SOURCE,
    attack_platforms,
    bundle_objects,
    external_id,
    external_ref,
    is_retired,
    tactics_of,
)
from ..records import Record, SourceFile

_CITATION = re.compile(r"\s*\(Citation:[^)]*\)")
_CODE = re.compile(r"</?code>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
_BLOCK_END = re.compile(r"</(?:p|li|h\d|tr|div|ol|ul|table)>|<br\s*/?>", re.IGNORECASE)
# MBC's E-ids extend the ATT&CK technique of the same number (E1055.012 ~ T1055.012, E1643.m02 ~ T1643).
_MBC_ENHANCED = re.compile(r"^E(\d{4})(?:\.(\d{3}))?")
_DEFAULT_RELATED_LIMIT = 250
_MAX_LITERAL = 100_000

_ATTACK_KINDS = {
    "attack-pattern": "technique",
    "intrusion-set": "group",
    "malware": "software",
    "tool": "software",
    "course-of-action": "mitigation",
    "campaign": "campaign",
}
_MBC_KINDS = {
    "malware-behavior": "behavior",
    "malware-method": "method",
    "malware-objective": "objective",
    "malware": "malware",
}
_DEFAULT_TYPES = {
    "attack": tuple(_ATTACK_KINDS),
    "capec": ("attack-pattern", "course-of-action"),
    "mbc": tuple(_MBC_KINDS),
}


class _Index:
    """Objects by id and active relationships in both directions."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.by_id = {o["id"]: o for o in objects}
        self.attack_names = {
            external_id(o): str(o.get("name", "")) for o in objects if o.get("type") == "attack-pattern"
        }
        # CAPEC keeps superseded copies of some courses of action under the same name: newest wins.
        self.newest_by_name: dict[str, dict[str, Any]] = {}
        for obj in objects:
            if obj.get("type") == "course-of-action":
                name = str(obj.get("name", "")).strip()
                seen = self.newest_by_name.get(name)
                newer = seen is None or (str(obj.get("modified")), obj["id"]) > (str(seen.get("modified")), seen["id"])
                if newer:
                    self.newest_by_name[name] = obj
        self.out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.into: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for obj in objects:
            if obj.get("type") == "relationship" and not is_retired(obj):
                self.out[str(obj.get("source_ref"))].append(obj)
                self.into[str(obj.get("target_ref"))].append(obj)

    def targets(self, stix_id: str, kind: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(relationship, active target) pairs of one relationship type leaving the object."""
        pairs = []
        for rel in self.out.get(stix_id, ()):
            target = self.by_id.get(str(rel.get("target_ref")))
            if rel.get("relationship_type") == kind and target is not None and not is_retired(target):
                pairs.append((rel, target))
        return pairs

    def sources(self, stix_id: str, kind: str) -> list[dict[str, Any]]:
        found = (
            self.by_id.get(str(r.get("source_ref")))
            for r in self.into.get(stix_id, ())
            if r.get("relationship_type") == kind
        )
        return [o for o in found if o is not None and not is_retired(o)]


def _clean(text: object, markup: bool = False) -> str:
    """Readable prose: no citation markers, `<code>` as backticks; with markup, no (X)HTML tags.

    ATT&CK prose is Markdown where `<placeholder>` can be real text, so only CAPEC strips tags.
    """
    if text is None:
        return ""
    value = _CODE.sub("`", _CITATION.sub("", str(text)))
    if markup and "<" in value:
        value = _TAG.sub(" ", _BLOCK_END.sub("\n", value))
        value = "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in html.unescape(value).splitlines())
        value = re.sub(r"\n{2,}", "\n", value)
    return value.strip()


def _section(label: str, value: object, markup: bool = False) -> str:
    """ "Label: text" for a non-empty value; lists become one item per line."""
    if isinstance(value, Mapping):
        value = [f"{k}: {', '.join(map(str, normalize.as_list(v)))}" for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        items = [i for i in (_clean(v, markup) for v in value) if i]
        return f"{label}:\n" + "\n".join(f"- {i}" for i in items) if items else ""
    text = _clean(value, markup)
    return f"{label}: {text}" if text else ""


def _skipped(obj: Mapping[str, Any], options: Mapping[str, Any]) -> bool:
    statuses = options.get("skip_status") or ()
    return is_retired(obj) or bool(obj.get("x_capec_deprecated")) or obj.get("x_capec_status") in statuses


# --- ATT&CK -----------------------------------------------------------------------------------


def _attack_related(obj: Mapping[str, Any], ix: _Index, limit: int) -> tuple[str, ...]:
    """Techniques a group/software/campaign uses or a mitigation mitigates (bounded)."""
    kind = "mitigates" if obj.get("type") == "course-of-action" else "uses"
    ids = {external_id(t) for _, t in ix.targets(obj["id"], kind) if t.get("type") == "attack-pattern"}
    return normalize.technique_ids(sorted(i for i in ids if i))[:limit]


def _attack_record(obj: dict[str, Any], ix: _Index, file: SourceFile) -> Record | None:
    ref = external_ref(obj, ATTACK_SOURCE)
    if ref is None:
        return None
    aid, kind, name = str(ref["external_id"]).strip(), _ATTACK_KINDS[obj["type"]], str(obj.get("name", ""))
    title, parent = name, None
    platforms = attack_platforms(obj.get("x_mitre_platforms") or ())
    aliases = [a for a in (obj.get("aliases") or obj.get("x_mitre_aliases") or ()) if a != name]
    tactics = tactics_of(obj)
    parts: list[str] = []
    if kind == "technique":
        if obj.get("x_mitre_is_subtechnique") or "." in aid:
            kind = "sub-technique"
            linked = [t for _, t in ix.targets(obj["id"], "subtechnique-of")]
            parent = external_id(linked[0]) if linked else aid.split(".", 1)[0]
            parent_name = linked[0].get("name") if linked else ix.attack_names.get(parent)
            title = f"{parent_name}: {name}" if parent_name else name
        techniques: tuple[str, ...] = normalize.technique_ids(aid)
        mitigations = sorted(
            {f"{external_id(m)} {m.get('name')}" for m in ix.sources(obj["id"], "mitigates") if external_id(m)}
        )
        strategies = sorted({str(s.get("name")) for s in ix.sources(obj["id"], "detects")})
        parts = [
            _section("Tactics", ", ".join(tactics)),
            _section("Platforms", ", ".join(obj.get("x_mitre_platforms") or ())),
            _clean(obj.get("description")),
            _section("Detection", obj.get("x_mitre_detection")),
            _section("Mitigations", mitigations),
            _section("Detection strategies", strategies),
        ]
    else:
        techniques = _attack_related(obj, ix, int(file.options.get("related_limit", _DEFAULT_RELATED_LIMIT)))
        parts = [
            _section("Type", obj["type"] if kind == "software" else ""),
            _section("Aliases", ", ".join(aliases)),
            _section("Platforms", ", ".join(obj.get("x_mitre_platforms") or ())),
            _section("First seen", obj.get("first_seen")),
            _section("Last seen", obj.get("last_seen")),
            _clean(obj.get("description")),
        ]
    metadata = {
        "kind": kind,
        "stix_id": obj["id"],
        "version": obj.get("x_mitre_version"),
        "modified": obj.get("modified"),
        "tactics": list(tactics),
        "aliases": aliases,
        "platforms": list(obj.get("x_mitre_platforms") or ()),
    }
    if parent:
        metadata["parent"] = parent
    return Record(
        source=file.source,
        upstream_id=aid,
        title=title,
        body=normalize.join_text(*parts),
        url=str(ref.get("url") or file.url_for()),
        techniques=techniques,
        platforms=platforms,
        tags=normalize.tags([kind, *tactics]),
        metadata=_compact(metadata),
        path=file.rel,
    )


# --- CAPEC ------------------------------------------------------------------------------------


def _capec_attack_ids(obj: Mapping[str, Any], source_name: str) -> tuple[str, ...]:
    """ATT&CK mappings; upstream writes them with and without the T (`1574.010`, `T1499`)."""
    ids = []
    for ref in obj.get("external_references") or ():
        if isinstance(ref, Mapping) and ref.get("source_name") == source_name and ref.get("external_id"):
            raw = str(ref["external_id"]).strip()
            ids.append(raw if raw[:1].upper() == "T" else f"T{raw}")
    return normalize.technique_ids(ids)


def _capec_record(obj: dict[str, Any], ix: _Index, file: SourceFile) -> Record | None:
    attack_source = str(file.options.get("attack_source", "ATTACK"))
    if obj["type"] == "course-of-action":
        return _capec_mitigation(obj, ix, file, attack_source)
    ref = external_ref(obj, "capec")
    if ref is None:
        return None
    parents = [external_id(ix.by_id[p], "capec") for p in obj.get("x_capec_child_of_refs") or () if p in ix.by_id]
    cwes = [
        str(r["external_id"])
        for r in obj.get("external_references") or ()
        if r.get("source_name") == "cwe" and r.get("external_id")
    ]
    fields = (
        ("Alternate terms", "alternate_terms"),
        ("Abstraction", "abstraction"),
        ("Likelihood of attack", "likelihood_of_attack"),
        ("Typical severity", "typical_severity"),
        ("Prerequisites", "prerequisites"),
        ("Skills required", "skills_required"),
        ("Resources required", "resources_required"),
        ("Consequences", "consequences"),
    )
    parts = [
        _clean(obj.get("description"), True),
        _clean(obj.get("x_capec_extended_description"), True),
        *(_section(label, obj.get(f"x_capec_{key}"), True) for label, key in fields),
        _clean(obj.get("x_capec_execution_flow"), True),
        _section("Example instances", obj.get("x_capec_example_instances"), True),
    ]
    metadata = {
        "kind": "attack-pattern",
        "stix_id": obj["id"],
        "status": obj.get("x_capec_status"),
        "abstraction": obj.get("x_capec_abstraction"),
        "severity": obj.get("x_capec_typical_severity"),
        "likelihood": obj.get("x_capec_likelihood_of_attack"),
        "cwes": cwes,
        "child_of": [p for p in parents if p],
        "version": obj.get("x_capec_version"),
    }
    return Record(
        source=file.source,
        upstream_id=str(ref["external_id"]),
        title=str(obj.get("name", "")),
        body=normalize.join_text(*parts),
        url=str(ref.get("url") or file.url_for()),
        techniques=_capec_attack_ids(obj, attack_source),
        platforms=(),
        tags=normalize.tags(obj.get("x_capec_domains") or ()),
        metadata=_compact(metadata),
        path=file.rel,
    )


def _capec_mitigation(obj: dict[str, Any], ix: _Index, file: SourceFile, attack_source: str) -> Record | None:
    """A course of action, titled after the pattern it was written for (`coa-102-0` -> CAPEC-102)."""
    name = str(obj.get("name", "")).strip()
    patterns = [t for _, t in ix.targets(obj["id"], "mitigates") if not _skipped(t, file.options)]
    if not name or ix.newest_by_name.get(name) is not obj or (ix.out.get(obj["id"]) and not patterns):
        return None  # a superseded copy, or it only mitigates retired patterns
    match = re.match(r"coa-(\d+)-", name)
    own = next((p for p in patterns if match and external_id(p, "capec") == f"CAPEC-{match.group(1)}"), None)
    main = own or (patterns[0] if patterns else None)
    main_ref = external_ref(main, "capec") if main else None
    title = (
        f"Mitigation for {main_ref['external_id']}: {main.get('name')}"
        if main and main_ref
        else f"CAPEC mitigation {name}"
    )
    mitigated = [f"{external_id(p, 'capec')} {p.get('name')}" for p in patterns]
    techniques = normalize.technique_ids(t for p in patterns for t in _capec_attack_ids(p, attack_source))
    return Record(
        source=file.source,
        upstream_id=name,
        title=title,
        body=normalize.join_text(_clean(obj.get("description"), True), _section("Mitigates", mitigated)),
        url=str(main_ref.get("url")) if main_ref else file.url_for(),
        techniques=techniques,
        tags=("mitigation",),
        path=file.rel,
        metadata=_compact(
            {"kind": "mitigation", "stix_id": obj["id"], "mitigates": [external_id(p, "capec") for p in patterns]}
        ),
    )


# --- MBC --------------------------------------------------------------------------------------


def _literal(value: object) -> object:
    """MBC stores some malware fields as Python-literal strings ("['Windows']"); never eval them."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{", "(") and len(value) < _MAX_LITERAL:
        try:
            return ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return value
    return value


def _mbc_defn(obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
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
    return str(_mbc_defn(obj)[0].get("external_id") or "").strip()


def _mbc_attack(mbc_id: str) -> str | None:
    match = _MBC_ENHANCED.match(mbc_id)
    if not match:
        return None
    return f"T{match.group(1)}.{match.group(2)}" if match.group(2) else f"T{match.group(1)}"


def _mbc_record(obj: dict[str, Any], ix: _Index, file: SourceFile) -> Record | None:
    defn, ext = _mbc_defn(obj)
    kind = _MBC_KINDS[obj["type"]]
    mbc_id = str(defn.get("external_id") or "").strip() or obj["id"]
    name = str(obj.get("name", "")).strip()
    description = str(defn.get("description") or "").strip()
    title, url, attack = name, str(defn.get("url") or ""), [description, _mbc_attack(mbc_id)]
    metadata: dict[str, Any] = {"kind": kind, "stix_id": obj["id"], "version": obj.get("obj_version")}
    parts: list[str] = []
    platforms: tuple[str, ...] = ()
    if kind == "method":
        behavior = ix.by_id.get(str(obj.get("behavior_ref")), {})
        bdefn = _mbc_defn(behavior)[0]
        title = f"{behavior.get('name')}: {name}" if behavior.get("name") else name
        url = url or str(bdefn.get("url") or "")
        metadata["behavior"] = bdefn.get("external_id")
        parts = [_section("Behavior", f"{bdefn.get('external_id', '')} {behavior.get('name', '')}")]
        attack.append(_mbc_attack(mbc_id) or _mbc_attack(str(bdefn.get("external_id") or "")))
    elif kind == "behavior":
        objectives = [str(ix.by_id[o].get("name")) for o in obj.get("objective_refs") or () if o in ix.by_id]
        methods = sorted(
            f"{_mbc_id(m)} {m.get('name')}"
            for m in ix.by_id.values()
            if m.get("type") == "malware-method" and m.get("behavior_ref") == obj["id"]
        )
        rules = [r.get("rule_name") for r in obj.get("detection_rules") or () if isinstance(r, Mapping)]
        parts = [
            _section("Objectives", ", ".join(objectives)),
            _section("Methods", methods),
            _section("Detection rules", rules),
        ]
        metadata.update(objectives=objectives, detection_rules=rules[:20], tags=obj.get("tags"))
    elif kind == "malware":
        used = ix.targets(obj["id"], "uses")
        behaviors = sorted({f"{_mbc_id(t)} {t.get('name')}" for _, t in used if _mbc_id(t)})
        attack += [_mbc_attack(_mbc_id(t)) for _, t in used]
        # ATT&CK targets are not in the MBC bundle; the relationship text names the technique id.
        attack += [
            r.get("description")
            for r in ix.out.get(obj["id"], ())
            if r.get("relationship_type") == "uses" and str(r.get("target_ref")).startswith("attack-pattern--")
        ]
        platforms = normalize.platforms(normalize.as_list(ext.get("platforms")))
        aliases = [str(a) for a in normalize.as_list(_literal(obj.get("aliases"))) if str(a) != name]
        parts = [
            _section("Aliases", ", ".join(aliases)),
            _section("Platforms", ", ".join(map(str, normalize.as_list(ext.get("platforms"))))),
            _section("Year", ext.get("year")),
            _section("Behaviors", behaviors),
        ]
        year = str(ext.get("year") or "") or None
        metadata.update(aliases=aliases, year=year, is_family=obj.get("is_family"))
    techniques = normalize.technique_ids(a for a in attack if a)
    return Record(
        source=file.source,
        upstream_id=mbc_id,
        title=title,
        body=normalize.join_text(description if description != "[1]" else "", *parts),
        url=url or file.url_for(),
        techniques=techniques,
        platforms=platforms,
        tags=normalize.tags([kind]),
        metadata=_compact(metadata),
        path=file.rel,
    )


# --- driver -----------------------------------------------------------------------------------


def _compact(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if v not in (None, "", [], {})}


_SCHEMES: dict[str, Callable[[dict[str, Any], _Index, SourceFile], Record | None]] = {
    "attack": _attack_record,
    "capec": _capec_record,
    "mbc": _mbc_record,
}


def parse(file: SourceFile) -> Iterator[Record]:
    """One record per kept, non-retired object of the bundle."""
    scheme = str(file.options.get("scheme", "attack"))
    build = _SCHEMES.get(scheme)
    if build is None:
        raise ParseError(f"unknown stix scheme {scheme!r}; use one of {', '.join(_SCHEMES)}")
    objects = bundle_objects(file.data)
    keep = set(file.options.get("types") or _DEFAULT_TYPES[scheme]) & set(_DEFAULT_TYPES[scheme])
    ix = _Index(objects)
    for obj in objects:
        if obj.get("type") in keep and not _skipped(obj, file.options):
            record = build(obj, ix, file)
            if record is not None and record.title:
                yield record
