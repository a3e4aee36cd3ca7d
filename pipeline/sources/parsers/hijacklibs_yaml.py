"""HijackLibs entries: one DLL that Windows executables can be tricked into loading."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag import artefacts
from secrag.artefacts import Artefact
from secrag.errors import ParseError

from .yaml_entry import compact, load_mapping, text, texts, web_url


def parse(file: SourceFile) -> Iterator[Record]:
    """The one DLL entry of a HijackLibs YAML file."""
    doc = load_mapping(file)
    name = text(doc.get("Name"))
    executables = [e for e in normalize.as_list(doc.get("VulnerableExecutables")) if isinstance(e, dict)]
    if not name or not executables:
        raise ParseError("HijackLibs entry lacks a Name or VulnerableExecutables")
    vendor = text(doc.get("Vendor"))
    locations = texts(normalize.as_list(doc.get("ExpectedLocations")))
    kinds = sorted(set(texts(e.get("Type") for e in executables)))
    cves = texts(normalize.as_list(doc.get("CVE")))
    yield Record(
        source=file.source,
        upstream_id=file.rel,
        title=name,
        body=normalize.join_text(
            _summary(name, vendor, kinds, len(executables)),
            "Expected locations: " + ", ".join(locations) if locations else "",
            "Vulnerable executables:\n" + "\n".join(_executable(e) for e in executables),
            "CVE: " + ", ".join(cves) if cves else "",
        ),
        url=web_url(file),
        # Every entry is DLL hijacking; the registry names the techniques rather than each file.
        techniques=normalize.technique_ids(file.options.get("techniques", [])),
        platforms=normalize.platforms(file.options.get("platforms", ["windows"])),
        tags=normalize.tags(kinds),
        metadata=compact(
            {
                "vendor": vendor,
                "author": text(doc.get("Author")),
                "created": text(doc.get("Created")),
                "expected_locations": locations,
                "hijack_types": kinds,
                "executables": len(executables),
                "auto_elevate": _auto_elevating(executables),
                "cves": cves,
                "resources": texts(normalize.as_list(doc.get("Resources"))),
            }
        ),
        path=file.rel,
        artefacts=_artefacts(name, locations, executables),
    )


def _artefacts(name: str, locations: list[str], executables: list[dict[str, Any]]) -> tuple[Artefact, ...]:
    """The DLL's name and its expected paths (each expected location with the name), and each vulnerable
    executable's path, file name and SHA-256 hashes."""
    paths = texts(e.get("Path") for e in executables)
    hashes = [h for e in executables for h in texts(normalize.as_list(e.get("SHA256")))]
    return artefacts.unique(
        [
            artefacts.windows_name("Name", name),
            *(artefacts.windows_path("ExpectedLocations", f"{loc}\\{name}") for loc in locations),
            *(artefacts.windows_path("VulnerableExecutables.Path", p) for p in paths),
            *(artefacts.windows_name("VulnerableExecutables.Path", p) for p in paths),
            *(artefacts.file_hash("VulnerableExecutables.SHA256", h) for h in hashes),
        ]
    )


def _auto_elevating(executables: list[dict[str, Any]]) -> list[str]:
    """Paths of the vulnerable executables that auto-elevate."""
    return sorted(texts(e.get("Path") for e in executables if e.get("AutoElevate")))


def _summary(name: str, vendor: str, kinds: list[str], executables: int) -> str:
    """ "x.dll (Vendor): DLL hijacking (kinds) by N executables." """
    by = f" ({vendor})" if vendor else ""
    plural = "s" if executables != 1 else ""
    return f"{name}{by}: DLL hijacking ({', '.join(kinds)}) by {executables} executable{plural}."


def _executable(entry: Mapping[str, Any]) -> str:
    notes = texts([entry.get("Type")])
    if entry.get("Variable"):
        notes.append(f"variable %{text(entry['Variable'])}%")
    if entry.get("AutoElevate"):
        notes.append("auto-elevates")
    if entry.get("PrivilegeEscalation"):
        notes.append("privilege escalation")
    line = f"- {text(entry.get('Path'))} ({'; '.join(notes)})"
    if entry.get("Condition"):
        line += f"\n  Condition: {text(entry['Condition'])}"
    return line
