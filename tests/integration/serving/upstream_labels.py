"""ATT&CK labels read straight from the upstream snapshots with plain code, not the parsers: per source, the
ids of the records that name each technique. The coverage check compares /v1/coverage's counts with these.

Where a parser deliberately drops or narrows something, the same rule is applied here, with the parser it
comes from named; everything else is read as the upstream writes it.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

Labels = dict[str, set[str]]  # technique id -> the upstream ids of the records labelled with it

TECHNIQUE = re.compile(r"T\d{4}(?:\.\d{3})?")
SIGMA_TAG = re.compile(r"attack\.(t\d{4}(?:\.\d{3})?)")
ATTACK_LINK = re.compile(r"attack\.mitre\.org/(?:versions/v\d+/)?techniques/(T\d{4})(?:/(\d{3}))?", re.IGNORECASE)
D3FEND_ID = re.compile(r':d3fend-id "([^"]+)"')
D3FEND_RESTRICTION = re.compile(r"owl:onProperty :([\w-]+) ;\s*owl:someValuesFrom :(T\d{4}(?:\.\d{3})?) \]")
ATTACK = "mitre-attack"
# PyYAML's own safe loader, not secrag.files.safe_yaml (the parsers' reader): a file its limits refused would
# be missing from both sides.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _add(labels: Labels, techniques: Iterable[str], record: str) -> None:
    for technique in techniques:
        labels.setdefault(technique, set()).add(record)


def _yaml_docs(path: Path) -> list[Any]:
    return list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=LOADER))


def _files(root: Path, pattern: str, exclude: str | None = None) -> Iterator[Path]:
    for path in sorted(root.glob(pattern)):
        if path.is_file() and not (exclude and exclude in path.relative_to(root).as_posix()):
            yield path


def sigma(root: Path) -> Labels:
    """`tags` `attack.t1003.001` of every rule in `rules*/`; deprecated rules are left out, as
    pipeline/sources/parsers/sigma_rule.py's _SKIP_STATUS does (other statuses, experimental too, count)."""
    labels: Labels = {}
    for path in _files(root, "rules*/**/*.yml"):
        docs = [d for d in _yaml_docs(path) if isinstance(d, dict)]
        for doc in docs:
            if str(doc.get("status", "")).lower() == "deprecated":
                continue
            tags = [str(t).strip().lower() for t in doc.get("tags") or ()]
            found = {m.group(1).upper() for t in tags if (m := SIGMA_TAG.fullmatch(t))}
            rule = doc.get("id") or f"{path.relative_to(root).as_posix()}#{doc.get('name') or ''}"
            _add(labels, found, str(rule))
    return labels


def atomic(root: Path) -> Labels:
    """Each test of `atomics/TXXXX/TXXXX.yaml` counts for the file's `attack_technique`."""
    labels: Labels = {}
    for path in _files(root, "atomics/T*/T*.yaml"):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
        technique = doc["attack_technique"]
        techniques = technique if isinstance(technique, list) else [technique]
        for test in doc.get("atomic_tests") or ():
            _add(labels, (str(t).upper() for t in techniques), str(test["auto_generated_guid"]))
    return labels


def elastic(root: Path) -> Labels:
    """`[[rule.threat]]` technique and subtechnique ids (tags are not read) of the rules outside `_deprecated/`;
    rules of maturity `deprecated` and threat entries of another framework are left out, as
    pipeline/sources/parsers/elastic_toml.py does."""
    labels: Labels = {}
    for pattern in ("rules/**/*.toml", "rules_building_block/**/*.toml"):
        for path in _files(root, pattern, exclude="/_deprecated/"):
            doc = tomllib.loads(path.read_text(encoding="utf-8"))
            if str(doc.get("metadata", {}).get("maturity", "")).lower() == "deprecated":
                continue
            found = set()
            for threat in doc["rule"].get("threat") or ():
                if threat.get("framework", "MITRE ATT&CK") != "MITRE ATT&CK":
                    continue
                for technique in threat.get("technique") or ():
                    found.add(technique["id"])
                    found.update(sub["id"] for sub in technique.get("subtechnique") or ())
            _add(labels, found, doc["rule"]["rule_id"])
    return labels


def splunk_security(root: Path) -> Labels:
    """`tags.mitre_attack_id` of the detections outside `detections/deprecated/`; `status: deprecated`
    detections elsewhere are left out, as pipeline/sources/parsers/splunk_detection.py does."""
    labels: Labels = {}
    for path in _files(root, "detections/**/*.yml", exclude="detections/deprecated/"):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
        if str(doc.get("status", "")).lower() == "deprecated":
            continue
        _add(labels, (str(t).strip().upper() for t in doc.get("tags", {}).get("mitre_attack_id") or ()), doc["id"])
    return labels


def mitre_car(root: Path) -> Labels:
    """`coverage[].technique` plus `coverage[].subtechniques` of every analytic."""
    labels: Labels = {}
    for path in _files(root, "analytics/*.yaml"):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
        found = set()
        for entry in doc.get("coverage") or ():
            found.add(str(entry["technique"]))
            found.update(str(s) for s in entry.get("subtechniques") or ())
        _add(labels, found, doc["id"])
    return labels


def stratus_red_team(root: Path) -> Labels:
    """Technique ids in a page's `## Mappings` section, and ATT&CK technique pages linked anywhere in it;
    only the pages that state a platform are techniques (registry option `page_marker`)."""
    labels: Labels = {}
    for path in _files(root, "docs/attack-techniques/**/*.md"):
        text = path.read_text(encoding="utf-8")
        if not re.search(r"^Platform:", text, re.MULTILINE):
            continue
        mappings = text.partition("\n## Mappings")[2].split("\n## ", 1)[0]
        found = set(TECHNIQUE.findall(mappings))
        found.update(
            f"{major.upper()}.{minor}" if minor else major.upper() for major, minor in ATTACK_LINK.findall(text)
        )
        _add(labels, found, path.relative_to(root).as_posix())
    return labels


def mitre_d3fend(root: Path) -> Labels:
    """The ATT&CK classes a D3FEND class with an id and a definition names in its own OWL restrictions (a
    `someValuesFrom :T1087.002`; `enables` names its tactic). That is the parser's rule
    (pipeline/sources/parsers/d3fend_rdf.py `_relations`): D3FEND's usual mapping, through the digital
    artefacts a defensive technique acts on and an offensive one uses, is not followed. The Turtle file
    writes one class per blank-line-separated block; a repeated d3fend-id counts once."""
    labels: Labels = {}
    text = (root / "src/ontology/d3fend-protege.ttl").read_text(encoding="utf-8")
    for block in text.split("\n\n"):
        found = D3FEND_ID.search(block)
        if found is None or ":definition " not in block:
            continue
        techniques = {t for prop, t in D3FEND_RESTRICTION.findall(block) if prop != "enables"}
        _add(labels, techniques, found.group(1))
    return labels


def _attack_id(obj: dict[str, Any]) -> str | None:
    for ref in obj.get("external_references") or ():
        if ref.get("source_name") == ATTACK and ref.get("external_id"):
            return str(ref["external_id"])
    return None


def _active(obj: dict[str, Any]) -> bool:
    return not obj.get("revoked") and not obj.get("x_mitre_deprecated")


def attack_bundle(root: Path) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = json.loads(
        (root / "enterprise-attack/enterprise-attack.json").read_text(encoding="utf-8")
    )["objects"]
    return objects


def attack_relations(objects: list[dict[str, Any]], kind: str, source_type: str) -> Labels:
    """Technique id -> ATT&CK ids of the active objects of `source_type` with an active `kind` relationship
    to that active technique (revoked and deprecated objects and relationships are history upstream)."""
    by_id = {o["id"]: o for o in objects}
    labels: Labels = {}
    for rel in objects:
        if rel.get("type") != "relationship" or rel.get("relationship_type") != kind or not _active(rel):
            continue
        source, target = by_id.get(rel["source_ref"]), by_id.get(rel["target_ref"])
        if (
            source is None
            or target is None
            or source.get("type") != source_type
            or target.get("type") != "attack-pattern"
        ):
            continue
        source_id, target_id = _attack_id(source), _attack_id(target)
        if source_id and target_id and _active(source) and _active(target):
            _add(labels, [target_id], source_id)
    return labels


def attack_mitigations(root: Path) -> Labels:
    """The mitigations (`course-of-action`) with a `mitigates` relationship to each technique."""
    return attack_relations(attack_bundle(root), "mitigates", "course-of-action")


def attack_technique_ids(root: Path) -> set[str]:
    """Every technique and sub-technique id of the bundle, active or not (what a folded parent's
    sub-techniques are looked up in)."""
    return {t for o in attack_bundle(root) if o.get("type") == "attack-pattern" and (t := _attack_id(o))}


def group_techniques(root: Path, group: str) -> set[str]:
    """The active techniques an active group `uses` (active relationships)."""
    used = attack_relations(attack_bundle(root), "uses", "intrusion-set")
    return {t for t, groups in used.items() if group in groups}


# source name -> (its folder in the snapshot, its counter)
COUNTERS: dict[str, tuple[str, Callable[[Path], Labels]]] = {
    "sigma": ("sigma", sigma),
    "elastic": ("elastic", elastic),
    "splunk_security": ("splunk_security", splunk_security),
    "mitre_car": ("mitre_car", mitre_car),
    "atomic": ("atomic", atomic),
    "stratus_red_team": ("stratus_red_team", stratus_red_team),
    "mitre_d3fend": ("mitre_d3fend", mitre_d3fend),
    "mitre_attack": ("mitre_attack", attack_mitigations),
}


def count(labels: Labels, technique: str, subtechniques: Iterable[str] = ()) -> int:
    """Records labelled with the technique or one of the given sub-techniques, each once."""
    records = set(labels.get(technique, ()))
    for sub in subtechniques:
        records |= labels.get(sub, set())
    return len(records)
