"""Velociraptor artifact definitions: description, parameters and the VQL source queries."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError

from .yaml_entry import compact, load_mapping, text, texts, web_url

# The first dotted part of an artifact name says which OS it runs on (`Windows.Forensics.Prefetch`).
_NAME_PLATFORMS = {"windows": "windows", "linux": "linux", "macos": "macos", "darwin": "macos"}
# Preconditions test the client OS: `SELECT OS From info() where OS = 'windows'` (or `=~ 'darwin'`).
_PRECONDITION_OS = re.compile(r"\bOS\s*=~?\s*['\"]([A-Za-z]+)", re.IGNORECASE)
_MAX_DEFAULT = 200  # longer parameter defaults are lookup tables, not prose


def parse(file: SourceFile) -> Iterator[Record]:
    """The one artifact defined by a Velociraptor YAML file."""
    doc = load_mapping(file)
    name = text(doc.get("name"))
    if not name:
        raise ParseError("Velociraptor artifact has no name")
    sources = [s for s in normalize.as_list(doc.get("sources")) if isinstance(s, dict)]
    kind = text(doc.get("type")).upper() or "CLIENT"
    references = texts([*normalize.as_list(doc.get("reference")), *normalize.as_list(doc.get("references"))])
    preconditions = texts([doc.get("precondition"), *(s.get("precondition") for s in sources)])
    description = text(doc.get("description"))
    yield Record(
        source=file.source,
        upstream_id=file.rel,
        title=name,
        body=normalize.join_text(
            f"{name} ({kind} artifact)",
            description,
            _parameters(doc.get("parameters")),
            _block("Precondition", doc.get("precondition")),
            *(_source(s) for s in sources),
            _block("Exported VQL", doc.get("export")),
            "References:\n" + "\n".join(references) if references else "",
        ),
        url=web_url(file),
        # Upstream has no ATT&CK field; some descriptions and references name techniques.
        techniques=normalize.technique_ids([description, *references]),
        platforms=_platforms(name, preconditions),
        tags=normalize.tags([kind, name.split(".")[0]]),
        metadata=_metadata(doc, kind, sources, references),
        path=file.rel,
    )


def _block(label: str, value: object) -> str:
    """ "Label:" and the value on the next lines, when there is one."""
    return f"{label}:\n" + text(value) if value else ""


def _metadata(
    doc: Mapping[str, Any], kind: str, sources: list[dict[str, Any]], references: list[str]
) -> dict[str, Any]:
    return compact(
        {
            "type": kind,
            "author": text(doc.get("author")),
            "aliases": texts(normalize.as_list(doc.get("aliases"))),
            "parameters": texts(p.get("name") for p in normalize.as_mappings(doc.get("parameters"))),
            "sources": texts(s.get("name") for s in sources),
            "tools": texts(t.get("name") for t in normalize.as_mappings(doc.get("tools"))),
            "required_permissions": texts(normalize.as_list(doc.get("required_permissions"))),
            "implied_permissions": texts(normalize.as_list(doc.get("implied_permissions"))),
            "references": references,
        }
    )


def _parameters(value: object) -> str:
    lines = []
    for param in normalize.as_mappings(value):
        line = f"- {text(param.get('name'))}"
        if param.get("type"):
            line += f" ({text(param['type'])})"
        if param.get("description"):
            line += f": {text(param['description'])}"
        default = text(param.get("default"))
        if default and len(default) <= _MAX_DEFAULT:
            line += f" [default: {default}]"
        lines.append(line)
    return "Parameters:\n" + "\n".join(lines) if lines else ""


def _source(source: Mapping[str, Any]) -> str:
    """One source's VQL; older artifacts hold a `queries` list instead of one `query`."""
    queries = texts([source.get("query"), *normalize.as_list(source.get("queries"))])
    header = "Source" + (f" {text(source['name'])}" if source.get("name") else "") + ":"
    return (
        normalize.join_text(
            header,
            text(source.get("description")),
            "Precondition: " + text(source["precondition"]) if source.get("precondition") else "",
            *queries,
        )
        if queries or source.get("precondition")
        else ""
    )


def _platforms(name: str, preconditions: list[str]) -> tuple[str, ...]:
    found = [_NAME_PLATFORMS.get(name.split(".")[0].lower())]
    for condition in preconditions:
        found += [_NAME_PLATFORMS.get(os.lower()) for os in _PRECONDITION_OS.findall(condition)]
    return normalize.platforms([p for p in found if p])
