"""Splunk security_content detection YAML: one record per detection, SPL search in the body."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError
from secrag.files import safe_yaml

# Data source name prefixes mapped onto the shared platform vocabulary; the first match wins, so
# specific prefixes come first. CrowdStrike, osquery and the like run anywhere and imply none.
_DATA_SOURCE_PLATFORMS = (
    ("sysmon for linux", "linux"),
    ("sysmon", "windows"),
    ("windows", "windows"),
    ("powershell", "windows"),
    ("ntlm", "windows"),
    ("linux", "linux"),
    ("aws", "aws"),
    ("azure active directory", "entra_id"),
    ("azure", "azure"),
    ("o365", "office365"),
    ("office 365", "office365"),
    ("g suite", "google_workspace"),
    ("google workspace", "google_workspace"),
    ("kubernetes", "kubernetes"),
    ("okta", "saas"),
    ("github", "saas"),
    ("pingid", "saas"),
    ("circleci", "saas"),
    ("palo alto", "network"),
    ("suricata", "network"),
    ("bro", "network"),
    ("splunk stream", "network"),
    ("nginx", "web"),
)


def parse(file: SourceFile) -> Iterator[Record]:
    """The detection of one YAML file; deprecated detections yield nothing."""
    doc = safe_yaml.load(file.text())
    if not isinstance(doc, dict):
        raise ParseError("detection is not a mapping")
    if not doc.get("id") or not doc.get("name"):
        raise ParseError("detection has no id or name")
    if str(doc.get("status", "")).lower() == "deprecated":
        return
    tags = normalize.as_mapping(doc.get("tags"))
    data_sources = [str(d) for d in normalize.as_list(doc.get("data_source") or doc.get("data_sources"))]
    stories = [str(s) for s in normalize.as_list(tags.get("analytic_story"))]
    yield Record(
        source=file.source,
        upstream_id=str(doc["id"]).strip(),
        title=str(doc["name"]).strip(),
        body=_body(doc, data_sources, stories),
        url=file.url_for(),
        techniques=normalize.technique_ids(normalize.as_list(tags.get("mitre_attack_id"))),
        platforms=_platforms(data_sources),
        tags=normalize.tags([doc.get("type"), *stories]),
        metadata=_metadata(doc, tags, data_sources, stories),
        path=file.rel,
    )


def _body(doc: Mapping[str, Any], data_sources: list[str], stories: list[str]) -> str:
    """Description, the SPL search, how to implement it, false positives, data sources and stories."""
    return normalize.join_text(
        f"Description: {doc['description']}" if doc.get("description") else "",
        f"Search (SPL):\n{str(doc['search']).strip()}" if doc.get("search") else "",
        f"How to implement: {doc['how_to_implement']}" if doc.get("how_to_implement") else "",
        f"Known false positives: {doc['known_false_positives']}" if doc.get("known_false_positives") else "",
        "Data sources: " + ", ".join(data_sources) if data_sources else "",
        "Analytic stories: " + ", ".join(stories) if stories else "",
    )


def _platforms(data_sources: list[str]) -> tuple[str, ...]:
    names = []
    for source in data_sources:
        lowered = source.lower()
        match = next((p for prefix, p in _DATA_SOURCE_PLATFORMS if lowered.startswith(prefix)), None)
        if match:
            names.append(match)
    return normalize.platforms(names)


def _metadata(
    doc: Mapping[str, Any], tags: Mapping[str, Any], data_sources: list[str], stories: list[str]
) -> dict[str, Any]:
    date = doc.get("date")
    out = {
        "type": doc.get("type"),
        "status": doc.get("status"),
        "version": doc.get("version"),
        "date": date.isoformat() if isinstance(date, dt.date) else date,
        "author": doc.get("author"),
        "data_source": data_sources,
        "analytic_story": stories,
        "security_domain": tags.get("security_domain"),
        "asset_type": tags.get("asset_type"),
        "risk_score": tags.get("risk_score"),
        "cve": [str(c) for c in normalize.as_list(tags.get("cve") or tags.get("CVE"))],
        "atomic_guid": [str(g) for g in normalize.as_list(tags.get("atomic_guid"))],
        "references": [str(r) for r in normalize.as_list(doc.get("references"))][:10],
    }
    return {k: v for k, v in out.items() if v not in (None, "", [])}
