"""MITRE ATLAS compiled release (`dist/ATLAS.yaml`): tactics, techniques, mitigations, case studies."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any

from secrag.errors import ParseError
from secrag.files import safe_yaml
from secrag.identifiers import is_technique_id

from .. import normalize
from ..records import YAML, Record, SourceFile, with_raw

DEFAULT_SITE = "https://atlas.mitre.org"
_PAGES = {"tactic": "tactics", "technique": "techniques", "mitigation": "mitigations", "case-study": "studies"}


def _iso(value: object) -> object:
    return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else value


def _attack_ref(entry: Mapping[str, Any]) -> str | None:
    ref = entry.get("ATT&CK-reference")
    raw = str(ref.get("id", "")).strip() if isinstance(ref, Mapping) else ""
    return raw or None


def _attack_techniques(ids: list[str | None]) -> tuple[str, ...]:
    return normalize.technique_ids(i for i in ids if i and is_technique_id(i))  # not TA.., M..


def _entries(value: object, what: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParseError(f"ATLAS {what} is not a list")
    return [e for e in value if isinstance(e, Mapping) and e.get("id") and e.get("name")]


class _Catalogue:
    """Everything by id, so records can name their tactics, parents and ATT&CK references."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        matrices = doc.get("matrices")
        if not isinstance(matrices, list) or not matrices:
            raise ParseError("ATLAS file has no matrices (is this the compiled dist/ATLAS.yaml?)")
        self.tactics: dict[str, Mapping[str, Any]] = {}
        self.techniques: dict[str, Mapping[str, Any]] = {}
        self.mitigations: dict[str, Mapping[str, Any]] = {}
        for matrix in matrices:
            if not isinstance(matrix, Mapping):
                raise ParseError("ATLAS matrix is not a mapping")
            for table, key in (
                (self.tactics, "tactics"),
                (self.techniques, "techniques"),
                (self.mitigations, "mitigations"),
            ):
                for entry in _entries(matrix.get(key), key):
                    table.setdefault(str(entry["id"]), entry)
        self.studies = {str(e["id"]): e for e in _entries(doc.get("case-studies"), "case-studies")}

    def name(self, atlas_id: str) -> str:
        entry = self.techniques.get(atlas_id) or self.tactics.get(atlas_id)
        return str(entry.get("name")) if entry else atlas_id

    def technique_title(self, entry: Mapping[str, Any]) -> str:
        parent = self.techniques.get(str(entry.get("subtechnique-of") or ""))
        return f"{parent['name']}: {entry['name']}" if parent else str(entry["name"])


def _record(
    file: SourceFile,
    entry: Mapping[str, Any],
    kind: str,
    title: str,
    body: str,
    techniques: tuple[str, ...],
    metadata: dict[str, Any],
) -> Record:
    site = str(file.options.get("site_url", DEFAULT_SITE)).rstrip("/")
    meta = {
        "kind": kind,
        "created": _iso(entry.get("created_date")),
        "modified": _iso(entry.get("modified_date")),
        **metadata,
    }
    record = Record(
        source=file.source,
        upstream_id=str(entry["id"]),
        title=title,
        body=body,
        url=f"{site}/{_PAGES[kind]}/{entry['id']}",
        techniques=techniques,
        tags=normalize.tags([kind, *metadata.get("tags", ())]),
        path=file.rel,
        metadata={k: v for k, v in meta.items() if v not in (None, "", [], {}) and k != "tags"},
    )
    return with_raw(record, dict(entry), YAML)


def _tactic(file: SourceFile, cat: _Catalogue, entry: Mapping[str, Any]) -> Record:
    ref = _attack_ref(entry)
    body = normalize.join_text(entry.get("description"), f"ATT&CK tactic: {ref}" if ref else None)
    return _record(file, entry, "tactic", str(entry["name"]), body, (), {"attack_reference": ref})


def _technique(file: SourceFile, cat: _Catalogue, entry: Mapping[str, Any]) -> Record:
    ref = _attack_ref(entry)
    tactics = [str(t) for t in normalize.as_list(entry.get("tactics"))]
    parent = entry.get("subtechnique-of")
    body = normalize.join_text(
        f"Tactics: {', '.join(cat.name(t) for t in tactics)}" if tactics else None,
        f"Sub-technique of {parent} {cat.name(str(parent))}" if parent else None,
        entry.get("description"),
        f"Maturity: {entry['maturity']}" if entry.get("maturity") else None,
        f"ATT&CK technique: {ref}" if ref else None,
    )
    return _record(
        file,
        entry,
        "technique",
        cat.technique_title(entry),
        body,
        _attack_techniques([ref]),
        {
            "tactics": tactics,
            "subtechnique_of": parent,
            "maturity": entry.get("maturity"),
            "attack_reference": ref,
            "tags": [cat.name(t) for t in tactics],
        },
    )


def _joined(label: str, values: list[str]) -> str | None:
    return f"{label}: {', '.join(values)}" if values else None


def _block(label: str, lines: list[str]) -> str | None:
    return f"{label}:\n" + "\n".join(lines) if lines else None


def _attack_refs(cat: _Catalogue, ids: list[str]) -> list[str | None]:
    """The ATT&CK references of the ATLAS techniques with these ids."""
    return [_attack_ref(cat.techniques.get(i, {})) for i in ids]


def _use_line(cat: _Catalogue, use: Mapping[str, Any]) -> str:
    """One technique a mitigation addresses: id, name and how it helps."""
    return f"- {use['id']} {cat.name(str(use['id']))}: {str(use.get('use') or '').strip()}"


def _mitigation(file: SourceFile, cat: _Catalogue, entry: Mapping[str, Any]) -> Record:
    uses = [u for u in normalize.as_list(entry.get("techniques")) if isinstance(u, Mapping) and u.get("id")]
    ids = [str(u["id"]) for u in uses]
    categories = [str(c) for c in normalize.as_list(entry.get("category"))]
    lifecycle = [str(c) for c in normalize.as_list(entry.get("ml-lifecycle"))]
    body = normalize.join_text(
        entry.get("description"),
        _joined("Category", categories),
        _joined("ML lifecycle", lifecycle),
        _block("Techniques", [_use_line(cat, u) for u in uses]),
    )
    return _record(
        file,
        entry,
        "mitigation",
        str(entry["name"]),
        body,
        _attack_techniques(_attack_refs(cat, ids)),
        {
            "atlas_techniques": ids,
            "category": categories,
            "ml_lifecycle": lifecycle,
            "attack_reference": _attack_ref(entry),
            "tags": categories,
        },
    )


def _step(cat: _Catalogue, step: Mapping[str, Any]) -> str:
    """One procedure step: tactic / technique title (id): what happened."""
    technique = str(step.get("technique"))
    what = str(step.get("description") or "").strip()
    if technique not in cat.techniques:
        return f"- {technique}: {what}"
    title = cat.technique_title(cat.techniques[technique])
    return f"- {cat.name(str(step.get('tactic')))} / {title} ({technique}): {what}"


# (label, key) of the case-study fields shown as "Label: value" lines, in body order.
_STUDY_FIELDS = (("Target", "target"), ("Actor", "actor"), ("Reporter", "reporter"), ("Type", "case-study-type"))


def _study_facts(entry: Mapping[str, Any]) -> list[str]:
    """Who was targeted, by whom, reported by whom, what kind of study, and when."""
    facts = [f"{label}: {entry[key]}" for label, key in _STUDY_FIELDS if entry.get(key)]
    if entry.get("incident-date"):
        facts.append(f"Incident date: {_iso(entry.get('incident-date'))}")
    return facts


def _references(entry: Mapping[str, Any]) -> list[str]:
    """Reference titles, or their URLs when untitled."""
    return [
        str(r.get("title") or r.get("url"))
        for r in normalize.as_list(entry.get("references"))
        if isinstance(r, Mapping) and (r.get("title") or r.get("url"))
    ]


def _case_study(file: SourceFile, cat: _Catalogue, entry: Mapping[str, Any]) -> Record:
    steps = [s for s in normalize.as_list(entry.get("procedure")) if isinstance(s, Mapping)]
    ids = [str(s.get("technique")) for s in steps if s.get("technique")]
    body = normalize.join_text(
        entry.get("summary"),
        *_study_facts(entry),
        _block("Procedure", [_step(cat, s) for s in steps]),
        _block("References", [f"- {r}" for r in _references(entry)[:20]]),
    )
    return _record(
        file,
        entry,
        "case-study",
        str(entry["name"]),
        body,
        _attack_techniques(_attack_refs(cat, ids)),
        {
            "atlas_techniques": sorted(set(ids)),
            "incident_date": _iso(entry.get("incident-date")),
            "case_study_type": entry.get("case-study-type"),
            "target": entry.get("target"),
            "actor": entry.get("actor"),
            "tags": [entry.get("case-study-type") or ""],
        },
    )


def parse(file: SourceFile) -> Iterator[Record]:
    """One record per tactic, technique, mitigation and case study of the compiled ATLAS data."""
    doc = safe_yaml.load(file.data)
    if not isinstance(doc, Mapping):
        raise ParseError("ATLAS file is not a mapping")
    cat = _Catalogue(doc)
    yield from (_tactic(file, cat, e) for e in cat.tactics.values())
    yield from (_technique(file, cat, e) for e in cat.techniques.values())
    yield from (_mitigation(file, cat, e) for e in cat.mitigations.values())
    yield from (_case_study(file, cat, e) for e in cat.studies.values())
