"""OSSEM data dictionaries: one event or table per YAML file (`<platform>/<product>/events/<name>.yml`),
its fields one line each, so that both the table and the fields it holds are found by name."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError

from .yaml_entry import compact, load_mapping, text, web_url

_UNKNOWN = {"", "tbd", "n/a", "none", "null", "''"}


def parse(file: SourceFile) -> Iterator[Record]:
    """The one event or table of an OSSEM data-dictionary file."""
    doc = load_mapping(file)
    name = text(doc.get("name"))
    fields = [f for f in normalize.as_list(doc.get("event_fields")) if isinstance(f, Mapping) and text(f.get("name"))]
    description = text(doc.get("description"))
    if not name or not (fields or description):
        raise ParseError("OSSEM entry lacks a name, or both a description and event_fields")
    platform = text(doc.get("platform")).lower()
    log_source = text(doc.get("log_source"))
    product = _product(file)
    event_id = _known(doc.get("event_id"))
    names = [text(f.get("name")) for f in fields]
    yield Record(
        source=file.source,
        upstream_id=file.rel,
        title=f"{_label(product, platform)}: {name}",
        body=normalize.join_text(
            description,
            _about(product, platform, log_source, event_id, _known(doc.get("event_version"))),
            "Fields:\n" + "\n".join(_field_line(f) for f in fields) if fields else "",
        ),
        url=web_url(file),
        platforms=normalize.platforms(file.options.get("platforms", {}).get(platform, platform)),
        tags=normalize.tags([product.replace(" ", "_"), log_source.replace(" ", "_")]),
        metadata=compact(
            {
                "product": product,
                "platform": platform,
                "log_source": log_source,
                "event_id": event_id,
                "fields": len(fields),
            }
        ),
        path=file.rel,
        identifiers=tuple(dict.fromkeys(names)),
    )


def _product(file: SourceFile) -> str:
    """The product the file's folder names (registry option `products`), else the folder itself."""
    parts = PurePosixPath(file.rel).parts
    # <platform>/<product>/.../events/x.yml, or <platform>/events/x.yml where the platform is the product
    folder = parts[1] if len(parts) > 3 else parts[0]
    products: Mapping[str, Any] = file.options.get("products", {})
    return text(products.get(folder)) or folder


def _label(product: str, platform: str) -> str:
    """`osquery (macos)`, `Sysmon (linux)`; the platform is left out where the product names it (Zeek, AWS)."""
    return product if platform in product.lower() or platform in {"zeek", "cowrie"} else f"{product} ({platform})"


def _known(value: object) -> str:
    """The value, or empty where OSSEM writes a placeholder (TBD, n/a)."""
    out = text(value)
    return "" if out.lower() in _UNKNOWN else out


def _about(product: str, platform: str, log_source: str, event_id: str, version: str) -> str:
    parts = [f"Product: {product}", f"platform: {platform}"]
    if log_source:
        parts.append(f"log source: {log_source}")
    if event_id:
        parts.append(f"event id: {event_id}" + (f" (version {version})" if version else ""))
    return "; ".join(parts) + "."


def _field_line(field: Mapping[str, Any]) -> str:
    """`- CommandLine (string): description. Example: ...; standard name: ...`"""
    kind = _known(field.get("type"))
    line = f"- {text(field.get('name'))}" + (f" ({kind})" if kind else "")
    description = _known(field.get("description"))
    if description:
        line += f": {description}"
    extras = []
    sample = _known(field.get("sample_value"))
    if sample:
        extras.append(f"example: {sample}")
    standard = _known(field.get("standard_name"))
    if standard and standard != text(field.get("name")):
        extras.append(f"standard name: {standard}")
    return line + (f" ({'; '.join(extras)})" if extras else "")
