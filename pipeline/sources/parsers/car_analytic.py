"""MITRE CAR analytics: one record per `analytics/CAR-*.yaml`, with implementations as text."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError
from secrag.files import safe_yaml

_CAR_ID = re.compile(r"^CAR-\d{4}-\d{2}-\d{3}$")


def parse(file: SourceFile) -> Iterator[Record]:
    """The analytic of one CAR YAML file."""
    doc = safe_yaml.load(file.text())
    if not isinstance(doc, dict):
        raise ParseError("analytic is not a mapping")
    car_id = str(doc.get("id") or "").strip()
    if not _CAR_ID.match(car_id):
        raise ParseError(f"analytic id {car_id!r} is not CAR-yyyy-mm-nnn")
    if not doc.get("title"):
        raise ParseError("analytic has no title")
    coverage = [c for c in normalize.as_list(doc.get("coverage")) if isinstance(c, dict)]
    page_url = str(file.options.get("page_url") or "")
    yield Record(
        source=file.source,
        upstream_id=car_id,
        title=str(doc["title"]).strip(),
        body=_body(doc),
        url=page_url.format(id=car_id) if page_url else file.url_for(),
        techniques=_techniques(coverage),
        platforms=normalize.platforms(normalize.as_list(doc.get("platforms"))),
        tags=normalize.tags(normalize.as_list(doc.get("analytic_types"))),
        metadata=_metadata(doc, coverage),
        path=file.rel,
    )


def _techniques(coverage: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The covered techniques and sub-techniques."""
    return normalize.technique_ids(
        [c.get("technique") for c in coverage]
        + [s for c in coverage for s in normalize.as_list(c.get("subtechniques"))]
    )


def _body(doc: Mapping[str, Any]) -> str:
    """Description, implementations, unit tests and data model references."""
    return normalize.join_text(
        f"Description: {doc['description']}" if doc.get("description") else "",
        *(_implementation(i) for i in normalize.as_list(doc.get("implementations")) if isinstance(i, dict)),
        *(_unit_test(t) for t in normalize.as_list(doc.get("unit_tests")) if isinstance(t, dict)),
        "Data model references: " + ", ".join(map(str, doc["data_model_references"]))
        if doc.get("data_model_references")
        else "",
    )


def _implementation(impl: Mapping[str, Any]) -> str:
    head = f"Implementation ({impl.get('type') or 'unknown'}"
    head += f", {impl['data_model']})" if impl.get("data_model") else ")"
    return normalize.join_text(head + ":", impl.get("description"), impl.get("code"))


def _unit_test(test: Mapping[str, Any]) -> str:
    commands = [str(c) for c in normalize.as_list(test.get("commands"))]
    return normalize.join_text(
        "Unit test: " + str(test.get("description") or "").strip(),
        "Commands:\n" + "\n".join(commands) if commands else "",
    )


def _strings(doc: Mapping[str, Any], key: str) -> list[str]:
    return [str(v) for v in normalize.as_list(doc.get(key))]


def _coverage(coverage: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Technique id -> how well the analytic covers it (Low, Moderate, High)."""
    return {
        str(c.get("technique")): str(c.get("coverage")) for c in coverage if c.get("technique") and c.get("coverage")
    }


def _metadata(doc: Mapping[str, Any], coverage: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    submitted = doc.get("submission_date")
    out = {
        "submission_date": submitted.isoformat() if isinstance(submitted, dt.date) else submitted,
        "information_domain": doc.get("information_domain"),
        "analytic_types": _strings(doc, "analytic_types"),
        "subtypes": _strings(doc, "subtypes"),
        "contributors": _strings(doc, "contributors"),
        "tactics": sorted({str(t) for c in coverage for t in normalize.as_list(c.get("tactics"))}),
        "coverage": _coverage(coverage),
        "d3fend": [str(m.get("id")) for m in normalize.as_mappings(doc.get("d3fend_mappings")) if m.get("id")],
    }
    return {k: v for k, v in out.items() if v not in (None, "", [], {})}
