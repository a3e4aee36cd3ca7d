"""MITRE Engage JSON data: activities, approaches and goals, with activities' ATT&CK mappings."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from secrag.errors import ParseError

from .. import normalize
from ..records import JSON, Record, SourceFile, with_raw

DEFAULT_SITE = "https://engage.mitre.org"
DEFAULT_RECORD_FILES = {"activities.json": "activity", "approaches.json": "approach", "goals.json": "goal"}
_PAGES = {"activity": "activities", "approach": "approaches", "goal": "goals"}
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


@lru_cache(maxsize=32)
def _load_sibling(path: str, mtime_ns: int, size: int) -> Any:  # noqa: ANN401
    """Parsed JSON of a sibling file; mtime and size in the key so a new checkout is re-read."""
    return json.loads(Path(path).read_bytes())


def _sibling(file: SourceFile, name: str) -> list[Mapping[str, Any]]:
    """A mapping list next to the parsed file (empty when upstream dropped it)."""
    path = file.root / PurePosixPath(file.rel).parent / name
    if not path.is_file():
        return []
    stat = path.stat()
    try:
        data = _load_sibling(str(path), stat.st_mtime_ns, stat.st_size)
    except ValueError as exc:
        raise ParseError(f"invalid JSON in sibling {name}: {exc}") from exc
    return [row for row in data if isinstance(row, Mapping)] if isinstance(data, list) else []


def _text(value: object) -> str:
    return _BREAK.sub("\n", str(value or "")).strip()


def _pairs(rows: list[Mapping[str, Any]], key: str, value: str, wanted: str) -> list[str]:
    return sorted({str(r[value]) for r in rows if r.get(key) == wanted and r.get(value)})


def _relations(file: SourceFile, kind: str, eid: str) -> dict[str, list[str]]:
    """Goals, approaches and activities linked to this entry through the Engage mapping files."""
    goal_approach = _sibling(file, "goal_approach_mappings.json")
    approach_activity = _sibling(file, "approach_activity_mappings.json")
    if kind == "goal":
        return {"approaches": _pairs(goal_approach, "goal_id", "approach_id", eid)}
    if kind == "approach":
        return {
            "goals": _pairs(goal_approach, "approach_id", "goal_id", eid),
            "activities": _pairs(approach_activity, "approach_id", "activity_id", eid),
        }
    approaches = _pairs(approach_activity, "activity_id", "approach_id", eid)
    goals = sorted({g for a in approaches for g in _pairs(goal_approach, "approach_id", "goal_id", a)})
    return {"goals": goals, "approaches": approaches}


def _names(file: SourceFile, record_files: Mapping[str, str]) -> dict[str, str]:
    names: dict[str, str] = {}
    for name in record_files:
        names.update({str(r["id"]): str(r.get("name", "")) for r in _sibling(file, name) if r.get("id")})
    return names


def _attack_rows(file: SourceFile, kind: str, eid: str) -> list[Mapping[str, Any]]:
    """An activity's rows of the ATT&CK mapping file; goals and approaches have none."""
    if kind != "activity":
        return []
    rows = _sibling(file, str(file.options.get("attack_mapping", "attack_mapping.json")))
    return [r for r in rows if r.get("eac_id") == eid]


def _related(relations: Mapping[str, list[str]], names: Mapping[str, str]) -> list[str]:
    """ "Goals: Name (id), ..." lines for the linked entries."""
    return [
        f"{label.capitalize()}: {', '.join(f'{names.get(i, i)} ({i})' for i in ids)}"
        for label, ids in relations.items()
        if ids
    ]


def _body(
    entry: Mapping[str, Any],
    relations: Mapping[str, list[str]],
    names: Mapping[str, str],
    mapping: list[Mapping[str, Any]],
    techniques: tuple[str, ...],
) -> str:
    attack_names = {str(r.get("attack_id")): str(r.get("attack_technique", "")) for r in mapping}
    vulnerabilities = sorted({f"{r.get('eav_id')}: {r.get('eav')}" for r in mapping if r.get("eav")})
    return normalize.join_text(
        entry.get("description"),
        _text(entry.get("long_description")),
        *_related(relations, names),
        "Adversary vulnerabilities:\n" + "\n".join(f"- {v}" for v in vulnerabilities) if vulnerabilities else None,
        "ATT&CK techniques: " + ", ".join(f"{t} {attack_names.get(t, '')}".strip() for t in techniques)
        if techniques
        else None,
    )


def _record(file: SourceFile, kind: str, entry: Mapping[str, Any], names: Mapping[str, str]) -> Record:
    eid = str(entry["id"]).strip()
    relations = _relations(file, kind, eid)
    mapping = _attack_rows(file, kind, eid)
    techniques = normalize.technique_ids(r.get("attack_id") for r in mapping)
    body = _body(entry, relations, names, mapping, techniques)
    site = str(file.options.get("site_url", DEFAULT_SITE)).rstrip("/")
    engagement = "strategic" if eid.startswith("S") else "engagement"
    metadata = {
        "kind": kind,
        "type": engagement,
        **{k: v for k, v in relations.items() if v},
        "vulnerabilities": sorted({str(r.get("eav_id")) for r in mapping if r.get("eav_id")}),
    }
    return Record(
        source=file.source,
        upstream_id=eid,
        title=str(entry.get("name", "")).strip(),
        body=body,
        url=f"{site}/{_PAGES[kind]}/{eid}/",
        techniques=techniques,
        tags=normalize.tags([kind, engagement]),
        path=file.rel,
        metadata={k: v for k, v in metadata.items() if v not in (None, [], "")},
    )


def parse(file: SourceFile) -> Iterator[Record]:
    """Records of one Engage record file; the mapping and detail files yield nothing themselves."""
    record_files = file.options.get("record_files") or DEFAULT_RECORD_FILES
    kind = record_files.get(PurePosixPath(file.rel).name)
    if kind is None:
        return
    if kind not in _PAGES:
        raise ParseError(f"unknown Engage record kind {kind!r}")
    try:
        entries = json.loads(file.text())
    except ValueError as exc:
        raise ParseError(f"invalid JSON: {exc}") from exc
    if not isinstance(entries, list):
        raise ParseError("Engage record file is not a JSON list")
    names = _names(file, record_files)
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("id") and entry.get("name"):
            yield with_raw(_record(file, kind, entry, names), dict(entry), JSON)
