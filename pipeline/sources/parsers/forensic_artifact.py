"""ForensicArtifacts definitions: one record per artifact document of a multi-document file."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import YAML, Record, SourceFile, with_raw
from secrag.errors import ParseError
from secrag.files import safe_yaml

from .yaml_entry import compact, text, texts, web_url

# Attribute keys rendered per source type, in reading order.
_ATTRIBUTE_KEYS = ("paths", "keys", "names", "query", "base_object")


def parse(file: SourceFile) -> Iterator[Record]:
    """Every artifact definition in the file, keyed by its upstream-unique name."""
    try:
        docs = safe_yaml.load_all(file.text())
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text: {exc.reason}") from exc
    if not docs:
        raise ParseError("no artifact definition in the file")
    for index, doc in enumerate(docs, start=1):
        if not isinstance(doc, dict) or not text(doc.get("name")):
            raise ParseError(f"document {index} is not an artifact definition with a name")
        if not isinstance(doc.get("sources"), list):
            raise ParseError(f"artifact {doc['name']} has no sources list")
    for doc in docs:
        yield with_raw(_record(file, doc), doc, YAML)  # one definition of a multi-document file


def _record(file: SourceFile, doc: Mapping[str, Any]) -> Record:
    name = text(doc["name"])
    sources = [s for s in doc["sources"] if isinstance(s, dict)]
    systems = _systems(doc, sources)
    aliases = texts(normalize.as_list(doc.get("aliases")))
    urls = texts(normalize.as_list(doc.get("urls")))
    types = sorted(set(texts(s.get("type") for s in sources)))
    return Record(
        source=file.source,
        upstream_id=name,
        title=name,
        body=normalize.join_text(
            f"{name}: {text(doc.get('doc'))}",
            "Aliases: " + ", ".join(aliases) if aliases else "",
            "Supported OS: " + ", ".join(systems) if systems else "",
            "Sources:\n" + "\n".join(_source_lines(s) for s in sources),
            "References:\n" + "\n".join(urls) if urls else "",
        ),
        url=web_url(file),
        # `Darwin` is macOS; the shared vocabulary already maps it.
        platforms=normalize.platforms(systems),
        tags=normalize.tags([*types, *normalize.as_list(doc.get("labels"))]),
        metadata=compact(
            {
                "supported_os": systems,
                "source_types": types,
                "aliases": aliases,
                "labels": texts(normalize.as_list(doc.get("labels"))),
                "urls": urls,
            }
        ),
        path=file.rel,
    )


def _systems(doc: Mapping[str, Any], sources: list[dict[str, Any]]) -> list[str]:
    """The artifact's operating systems, then those only some of its sources name."""
    systems = texts(normalize.as_list(doc.get("supported_os")))
    for source in sources:
        systems += [s for s in texts(normalize.as_list(source.get("supported_os"))) if s not in systems]
    return systems


def _source_lines(source: Mapping[str, Any]) -> str:
    attributes = normalize.as_mapping(source.get("attributes"))
    kind = text(source.get("type"))
    only = texts(normalize.as_list(source.get("supported_os")))
    header = f"- {kind}" + (f" ({', '.join(only)})" if only else "")
    values: list[str] = []
    for key in _ATTRIBUTE_KEYS:
        if key in attributes:
            values += texts(normalize.as_list(attributes[key]))
    for pair in normalize.as_list(attributes.get("key_value_pairs")):
        if isinstance(pair, dict):
            values.append(f"{text(pair.get('key'))} -> {text(pair.get('value'))}")
    if attributes.get("cmd"):
        values.append(" ".join(texts([attributes["cmd"], *normalize.as_list(attributes.get("args"))])))
    return header + "".join(f"\n  {v}" for v in values)
