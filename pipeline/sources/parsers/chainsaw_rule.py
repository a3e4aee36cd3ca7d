"""Chainsaw's own rule format (kind, fields, filter, aggregate): one record per rule file."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

import yaml

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError
from secrag.files import safe_yaml


def parse(file: SourceFile) -> Iterator[Record]:
    """The rule of one Chainsaw YAML file; a file that is not valid YAML raises ParseError."""
    doc = safe_yaml.load(file.text())
    if not isinstance(doc, dict):
        raise ParseError("rule is not a mapping")
    if not doc.get("title"):
        raise ParseError("rule has no title")
    if "filter" not in doc:
        raise ParseError("rule has no filter")
    if str(doc.get("status", "")).lower() == "deprecated":
        return
    title = str(doc["title"]).strip()
    yield Record(
        source=file.source,
        upstream_id=str(doc["id"]).strip() if doc.get("id") else file.rel,
        title=title,
        body=_body(doc),
        url=file.url_for(quote(file.rel)),
        # Chainsaw has no tags; some titles lead with the ATT&CK id ("T1562.001 - ...").
        techniques=normalize.technique_ids(title),
        platforms=normalize.platforms(normalize.as_list(file.options.get("platforms"))),
        tags=normalize.tags([doc.get("group"), doc.get("kind")]),
        metadata=_metadata(doc),
        path=file.rel,
    )


def _body(doc: Mapping[str, Any]) -> str:
    """Description, group, kind, the filter and aggregate as YAML, and the fields shown."""
    fields = [f for f in normalize.as_list(doc.get("fields")) if isinstance(f, dict)]
    return normalize.join_text(
        f"Description: {doc['description']}" if doc.get("description") else "",
        f"Group: {doc['group']}" if doc.get("group") else "",
        f"Kind: {doc['kind']}" if doc.get("kind") else "",
        "Filter:\n" + _dump(doc["filter"]),
        "Aggregate:\n" + _dump(doc["aggregate"]) if doc.get("aggregate") else "",
        "Fields: " + ", ".join(_field_line(f) for f in fields) if fields else "",
    )


def _field_line(field: Mapping[str, Any]) -> str:
    name, to = field.get("name"), field.get("to")
    return f"{name} ({to})" if to and to != name else str(name)


def _dump(value: object) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000).strip()


def _metadata(doc: Mapping[str, Any]) -> dict[str, Any]:
    meta = {
        "level": doc.get("level"),
        "status": doc.get("status"),
        "kind": doc.get("kind"),
        "group": doc.get("group"),
        "authors": [str(a) for a in normalize.as_list(doc.get("authors"))],
        "timestamp": doc.get("timestamp"),
        "date": doc.get("date"),
        "version": doc.get("version"),
        "references": [str(r) for r in normalize.as_list(doc.get("references"))],
    }
    return {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in meta.items() if v not in (None, "", [])}
