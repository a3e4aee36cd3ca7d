"""Elastic detection-rules TOML files: one record per rule, ATT&CK ids from `[[rule.threat]]`."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError

_ATTACK = "MITRE ATT&CK"
# Integration package names that name a platform but are not in the shared vocabulary.
_INTEGRATION_ALIASES = {
    "o365": "office365",
    "o365_metrics": "office365",
    "okta": "saas",
    "github": "saas",
    "entityanalytics_entra_id": "entra_id",
    "azure_openai": "azure",
    "aws_bedrock": "aws",
    "aws_bedrock_agentcore": "aws",
    "google_workspace": "google_workspace",
}


def parse(file: SourceFile) -> Iterator[Record]:
    """The rule of one TOML file; deprecated rules yield nothing."""
    try:
        doc = tomllib.loads(file.text())
    except tomllib.TOMLDecodeError as exc:
        raise ParseError(f"invalid TOML: {exc}") from exc
    rule = doc.get("rule")
    meta = normalize.as_mapping(doc.get("metadata"))
    if not isinstance(rule, dict):
        raise ParseError("no [rule] table")
    if not rule.get("rule_id") or not rule.get("name"):
        raise ParseError("rule has no rule_id or name")
    if str(meta.get("maturity", "")).lower() == "deprecated":
        return
    threats = [
        t
        for t in normalize.as_list(rule.get("threat"))
        if isinstance(t, dict) and t.get("framework", _ATTACK) == _ATTACK
    ]
    yield Record(
        source=file.source,
        upstream_id=str(rule["rule_id"]).strip(),
        title=str(rule["name"]).strip(),
        body=_body(rule),
        url=file.url_for(),
        techniques=normalize.technique_ids(_threat_technique_ids(threats)),
        platforms=_platforms(rule, meta),
        tags=normalize.tags(normalize.as_list(rule.get("tags"))),
        metadata=_metadata(rule, meta, threats),
        path=file.rel,
    )


def _threat_technique_ids(threats: Sequence[Mapping[str, Any]]) -> list[str]:
    """Technique and sub-technique ids of the ATT&CK threat entries (tags are not trusted)."""
    ids: list[str] = []
    for threat in threats:
        for technique in normalize.as_list(threat.get("technique")):
            if not isinstance(technique, dict):
                continue
            ids.append(str(technique.get("id", "")))
            ids.extend(
                str(s.get("id", "")) for s in normalize.as_list(technique.get("subtechnique")) if isinstance(s, dict)
            )
    return ids


def _platforms(rule: Mapping[str, Any], meta: Mapping[str, Any]) -> tuple[str, ...]:
    names = [
        t.split(":", 1)[1] for t in normalize.as_list(rule.get("tags")) if isinstance(t, str) and t.startswith("OS:")
    ]
    for integration in normalize.as_list(meta.get("integration")):
        name = str(integration).lower()
        names.append(_INTEGRATION_ALIASES.get(name, name))
    return normalize.platforms(names)


def _body(rule: Mapping[str, Any]) -> str:
    query = rule.get("query")
    language = rule.get("language") or rule.get("type")
    ml_jobs = normalize.as_list(rule.get("machine_learning_job_id"))
    threshold = rule.get("threshold")
    new_terms = rule.get("new_terms")
    false_positives = [" ".join(str(v).split()) for v in normalize.as_list(rule.get("false_positives"))]
    return normalize.join_text(
        f"Description: {rule.get('description', '')}" if rule.get("description") else "",
        f"Query ({language}):\n{query}" if query else "",
        f"Threshold: {_inline(threshold)}" if threshold else "",
        f"New terms: {_inline(new_terms)}" if new_terms else "",
        "Machine learning jobs: " + ", ".join(map(str, ml_jobs)) if ml_jobs else "",
        "False positives:\n" + "\n".join(f"- {v}" for v in false_positives) if false_positives else "",
        rule.get("note"),
    )


def _inline(value: object) -> str:
    """`key: value` pairs of a small table on one line (threshold, new_terms)."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_inline(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_inline(v) for v in value)
    return str(value)


def _metadata(rule: Mapping[str, Any], meta: Mapping[str, Any], threats: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    tactics = sorted(
        {str(t["tactic"].get("id")) for t in threats if isinstance(t.get("tactic"), dict) and t["tactic"].get("id")}
    )
    out = {
        "severity": rule.get("severity"),
        "risk_score": rule.get("risk_score"),
        "type": rule.get("type"),
        "language": rule.get("language"),
        "index": [str(i) for i in normalize.as_list(rule.get("index"))],
        "building_block": bool(rule.get("building_block_type")),
        "maturity": meta.get("maturity"),
        "integration": [str(i) for i in normalize.as_list(meta.get("integration"))],
        "creation_date": meta.get("creation_date"),
        "updated_date": meta.get("updated_date"),
        "tactics": tactics,
        "author": [str(a) for a in normalize.as_list(rule.get("author"))],
        "references": [str(r) for r in normalize.as_list(rule.get("references"))][:10],
    }
    return {k: v for k, v in out.items() if v not in (None, "", [])}
