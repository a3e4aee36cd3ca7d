"""KAPE targets (`.tkape`, what to collect) and modules (`.mkape`, how to process it)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError

from .yaml_entry import compact, load_mapping, text, texts, web_url

_KINDS = {".tkape": "target", ".mkape": "module"}
# Upstream keeps documentation links and caveats in trailing `#` comments; YAML drops them.
_COMMENT = re.compile(r"^[ \t]*#+[ \t]?(.*)$", re.MULTILINE)


def parse(file: SourceFile) -> Iterator[Record]:
    """The one target or module defined by a KAPE file."""
    suffix = PurePosixPath(file.rel).suffix.lower()
    kind = _KINDS.get(suffix)
    if kind is None:
        raise ParseError(f"not a KAPE file suffix: {suffix or '(none)'}")
    doc = load_mapping(file)
    entries_key = "Targets" if kind == "target" else "Processors"
    entries = [e for e in normalize.as_list(doc.get(entries_key)) if isinstance(e, dict)]
    if not entries:
        raise ParseError(f"KAPE {kind} has no {entries_key}")
    name = PurePosixPath(file.rel).stem
    categories = sorted(set(texts(e.get("Category") for e in entries) + texts([doc.get("Category")])))
    yield Record(
        source=file.source,
        upstream_id=file.rel,
        title=name,
        body=_body(file, doc, name, kind, entries_key, entries),
        url=web_url(file),
        platforms=normalize.platforms(file.options.get("platforms", ["windows"])),
        tags=normalize.tags([kind, *categories]),
        metadata=compact(
            {
                "kind": kind,
                "id": text(doc.get("Id")),
                "author": text(doc.get("Author")),
                "version": text(doc.get("Version")),
                "categories": categories,
                "export_format": text(doc.get("ExportFormat")),
                "binary_url": text(doc.get("BinaryUrl")),
                "entries": len(entries),
            }
        ),
        path=file.rel,
    )


def _body(
    file: SourceFile, doc: Mapping[str, Any], name: str, kind: str, entries_key: str, entries: list[dict[str, Any]]
) -> str:
    """What the file is, its targets or processors one per line, and the notes upstream left in comments."""
    render = _target_line if kind == "target" else _processor_line
    notes = [n for n in (m.strip() for m in _COMMENT.findall(file.text())) if n]
    return normalize.join_text(
        f"{name} (KAPE {kind}): {text(doc.get('Description'))}",
        f"Category: {text(doc['Category'])}" if doc.get("Category") else "",
        f"Binary: {text(doc['BinaryUrl'])}" if doc.get("BinaryUrl") else "",
        f"{entries_key}:\n" + "\n".join(render(e) for e in entries),
        "Notes:\n" + "\n".join(notes) if notes else "",
    )


def _target_line(entry: Mapping[str, Any]) -> str:
    where = text(entry.get("Path"))
    if entry.get("FileMask"):
        where += f" (files: {text(entry['FileMask'])})"
    flags = [flag for flag, key in (("recursive", "Recursive"), ("always", "AlwaysAddToQueue")) if entry.get(key)]
    line = f"- {text(entry.get('Name'))} [{text(entry.get('Category'))}]: {where}"
    if flags:
        line += f" ({', '.join(flags)})"
    if entry.get("Comment"):
        line += f"\n  {text(entry['Comment'])}"
    return line


def _processor_line(entry: Mapping[str, Any]) -> str:
    command = " ".join(texts([entry.get("Executable"), entry.get("CommandLine")]))
    extras = texts([entry.get("ExportFormat"), entry.get("ExportFile")])
    return f"- {command}" + (f" ({', '.join(extras)})" if extras else "")
