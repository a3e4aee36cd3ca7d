"""LOLBAS entries: one Windows binary, script or library with its abusable commands."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag import artefacts
from secrag.artefacts import Artefact
from secrag.errors import ParseError

from .yaml_entry import compact, load_mapping, text, texts, web_url

_MAX_PATHS = 10


def parse(file: SourceFile) -> Iterator[Record]:
    """The one LOLBAS entry of a YAML file."""
    doc = load_mapping(file)
    name = text(doc.get("Name"))
    if not name:
        raise ParseError("LOLBAS entry has no Name")
    commands = [c for c in normalize.as_list(doc.get("Commands")) if isinstance(c, dict)]
    if not commands:
        raise ParseError("LOLBAS entry has no Commands")
    kind = PurePosixPath(file.rel).parent.name
    paths = texts(p.get("Path") for p in normalize.as_mappings(doc.get("Full_Path")))
    categories = sorted(set(texts(c.get("Category") for c in commands)))
    yield Record(
        source=file.source,
        upstream_id=file.rel,
        title=name,
        body=normalize.join_text(
            f"{name} ({kind}): {text(doc.get('Description'))}",
            _aliases(doc),
            "Commands:\n" + "\n\n".join(_command(c) for c in commands),
            _listed("Paths", paths[:_MAX_PATHS]),
            _listed("Detection", _detections(doc)),
            _listed("Code samples", texts(c.get("Code") for c in normalize.as_mappings(doc.get("Code_Sample")))),
        ),
        url=web_url(file),
        techniques=normalize.technique_ids(c.get("MitreID") for c in commands),
        platforms=normalize.platforms(file.options.get("platforms", ["windows"])),
        tags=normalize.tags(categories),
        metadata=_metadata(doc, kind, commands, categories, paths),
        path=file.rel,
        artefacts=_artefacts(name, doc, paths),
    )


def _artefacts(name: str, doc: Mapping[str, Any], paths: list[str]) -> tuple[Artefact, ...]:
    """The binary's name and aliases, and every full path (its file name too, when it is not the name)."""
    aliases = texts(a.get("Alias") for a in normalize.as_mappings(doc.get("Aliases")))
    named = artefacts.windows_name("Name", name)
    file_names = [artefacts.windows_name("Full_Path.Path", p) for p in paths]
    return artefacts.unique(
        [
            named,
            *(artefacts.windows_name("Aliases.Alias", a) for a in aliases),
            *(artefacts.windows_path("Full_Path.Path", p) for p in paths),
            *(f for f in file_names if f is not None and (named is None or f.key != named.key)),
        ]
    )


def _metadata(
    doc: Mapping[str, Any], kind: str, commands: list[dict[str, Any]], categories: list[str], paths: list[str]
) -> dict[str, Any]:
    return compact(
        {
            "kind": kind,
            "author": text(doc.get("Author")),
            "created": text(doc.get("Created")),
            "categories": categories,
            "privileges": sorted(set(texts(c.get("Privileges") for c in commands))),
            "full_paths": paths[:_MAX_PATHS],
            "commands": len(commands),
            "resources": texts(r.get("Link") for r in normalize.as_mappings(doc.get("Resources"))),
        }
    )


def _command(command: Mapping[str, Any]) -> str:
    header = " | ".join(
        t
        for t in (
            text(command.get("Category")),
            text(command.get("MitreID")),
            f"privileges: {text(command.get('Privileges'))}" if command.get("Privileges") else "",
        )
        if t
    )
    return "\n".join(
        t
        for t in (
            f"- {text(command.get('Description'))} [{header}]",
            f"  Use case: {text(command.get('Usecase'))}" if command.get("Usecase") else "",
            f"  Command: {text(command.get('Command'))}",
            f"  OS: {text(command.get('OperatingSystem'))}" if command.get("OperatingSystem") else "",
        )
        if t
    )


def _aliases(doc: Mapping[str, Any]) -> str:
    names = texts(a.get("Alias") for a in normalize.as_mappings(doc.get("Aliases")))
    return "Aliases: " + ", ".join(names) if names else ""


def _detections(doc: Mapping[str, Any]) -> list[str]:
    """IOCs and links to Sigma/Elastic/Splunk rules, as `Kind: value` lines."""
    lines = []
    for item in normalize.as_mappings(doc.get("Detection")):
        for kind, value in item.items():
            lines.append(f"{kind}: {text(value)}")
    return lines


def _listed(label: str, items: list[str]) -> str:
    return f"{label}:\n" + "\n".join(f"- {i}" for i in items) if items else ""
