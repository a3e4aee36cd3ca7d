"""Sigma-format rules (SigmaHQ, Hayabusa): one record per rule or correlation document."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

import yaml

from pipeline.sources import normalize
from pipeline.sources.records import YAML, Record, SourceFile, with_raw
from secrag.errors import ParseError
from secrag.files import safe_yaml

# Sigma products and categories outside the shared platform vocabulary, mapped onto it.
_PRODUCT_ALIASES = {
    "m365": "office365",
    "okta": "saas",
    "onelogin": "saas",
    "github": "saas",
    "bitbucket": "saas",
    "qualys": "saas",
    "zeek": "network",
    "cisco": "network",
    "fortigate": "network",
    "fortios": "network",
    "huawei": "network",
    "juniper": "network",
    "paloalto": "network",
    "opencanary": "network",
}
_CATEGORY_ALIASES = {
    "webserver": "web",
    "proxy": "network",
    "dns": "network",
    "firewall": "network",
}
_SERVICE_ALIASES = {"apache": "web", "nginx": "web", "netflow": "network"}
_SKIP_STATUS = frozenset({"deprecated"})
_MAX_REFERENCES = 10


def parse(file: SourceFile) -> Iterator[Record]:
    """Every non-deprecated rule document of one Sigma-format YAML file."""
    docs = safe_yaml.load_all(file.text())
    if not docs:
        raise ParseError("no YAML document in the file")
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise ParseError(f"document {index + 1} is not a mapping")
        if "detection" not in doc and "correlation" not in doc:
            raise ParseError(f"document {index + 1} has neither detection nor correlation")
        if not doc.get("title"):
            raise ParseError(f"document {index + 1} has no title")
    for doc in docs:
        if str(doc.get("status", "")).lower() in _SKIP_STATUS:
            continue
        record = _record(file, doc, docs)
        yield with_raw(record, doc, YAML) if len(docs) > 1 else record  # one rule: the file is the record


def _record(file: SourceFile, doc: Mapping[str, Any], docs: list[Any]) -> Record:
    raw_tags = [str(t) for t in normalize.as_list(doc.get("tags")) if t is not None]
    logsource = normalize.as_mapping(doc.get("logsource"))
    plats = _platforms(logsource)
    body_parts = [
        _labelled("Description", doc.get("description")),
        _logsource_line(logsource),
    ]
    if "detection" in doc:
        body_parts.append("Detection:\n" + _dump(doc["detection"]))
    if "correlation" in doc:
        plats, correlated = _correlation(doc, docs, plats)
        body_parts += correlated
    falsepositives = [str(v) for v in normalize.as_list(doc.get("falsepositives")) if v is not None]
    if falsepositives:
        body_parts.append("False positives:\n" + "\n".join(f"- {v}" for v in falsepositives))
    return Record(
        source=file.source,
        upstream_id=_upstream_id(file, doc, docs),
        title=str(doc["title"]).strip(),
        body=normalize.join_text(*body_parts),
        url=file.url_for(quote(file.rel)),
        techniques=normalize.technique_ids(raw_tags),
        platforms=plats,
        tags=normalize.tags(raw_tags),
        metadata=_metadata(doc, logsource, falsepositives),
        path=file.rel,
    )


def _correlation(doc: Mapping[str, Any], docs: list[Any], plats: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """(platforms with those of the correlated rules, body parts: the correlation and each rule's detection)."""
    parts = ["Correlation:\n" + _dump(doc["correlation"])]
    for ref in _referenced(doc, docs):
        plats = tuple(sorted(set(plats) | set(_platforms(ref.get("logsource") or {}))))
        parts.append(f"Correlated rule {ref.get('title')}:\n" + _dump(ref.get("detection")))
    return plats, parts


def _upstream_id(file: SourceFile, doc: Mapping[str, Any], docs: list[Any]) -> str:
    """The rule's id; the file path when it has none (plus its name inside multi-rule files)."""
    if doc.get("id"):
        return str(doc["id"]).strip()
    if len(docs) > 1 and doc.get("name"):
        return f"{file.rel}#{doc['name']}"
    return file.rel


def _referenced(doc: Mapping[str, Any], docs: list[Any]) -> list[Mapping[str, Any]]:
    """Rules in the same file that a correlation names (by `name` or `id`)."""
    correlation = normalize.as_mapping(doc.get("correlation"))
    wanted = {str(r) for r in normalize.as_list(correlation.get("rules"))}
    return [
        d
        for d in docs
        if d is not doc and "detection" in d and (str(d.get("name")) in wanted or str(d.get("id")) in wanted)
    ]


def _platforms(logsource: Mapping[str, Any]) -> tuple[str, ...]:
    product = str(logsource.get("product") or "").lower()
    category = str(logsource.get("category") or "").lower()
    service = str(logsource.get("service") or "").lower()
    names = [
        _PRODUCT_ALIASES.get(product, product),
        _CATEGORY_ALIASES.get(category),
        _SERVICE_ALIASES.get(service),
    ]
    return normalize.platforms([n for n in names if n])


def _logsource_line(logsource: Mapping[str, Any]) -> str:
    parts = [f"{k}: {v}" for k, v in logsource.items() if k != "definition" and v is not None]
    return "Log source: " + ", ".join(parts) if parts else ""


def _labelled(label: str, value: object) -> str:
    text = str(value).strip() if value is not None else ""
    return f"{label}: {text}" if text else ""


def _dump(value: object) -> str:
    return yaml.safe_dump(
        _plain(value), sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000
    ).strip()


def _plain(value: Any) -> Any:  # noqa: ANN401 - mirrors arbitrary YAML
    """The value with dates as ISO strings, so it dumps and serialises as JSON."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _metadata(doc: Mapping[str, Any], logsource: Mapping[str, Any], falsepositives: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "level": doc.get("level"),
        "status": doc.get("status"),
        "logsource": _plain(dict(logsource)),
        "falsepositives": falsepositives,
        "author": doc.get("author"),
        "date": doc.get("date"),
        "modified": doc.get("modified"),
        "references": [str(r) for r in normalize.as_list(doc.get("references"))][:_MAX_REFERENCES],
        "related": doc.get("related"),
        "rule_type": "correlation" if "correlation" in doc else "detection",
        "ruletype": doc.get("ruletype"),
        "details": doc.get("details"),
    }
    return {k: v for k, v in _plain(meta).items() if v not in (None, "", [], {})}
