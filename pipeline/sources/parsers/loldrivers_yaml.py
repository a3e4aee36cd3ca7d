"""LOLDrivers entries: one vulnerable or malicious Windows driver with a few sample hashes."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag import artefacts
from secrag.artefacts import Artefact
from secrag.errors import ParseError
from secrag.files import safe_yaml

from .yaml_entry import compact, load_mapping, text, texts, web_url

_DEFAULT_MAX_SAMPLES = 5
# Sample fields that say what the driver is, rendered into the body.
_SAMPLE_FIELDS = ("OriginalFilename", "Company", "Product", "Description", "FileVersion", "Signature")
_SAMPLES_KEY = re.compile(r"^KnownVulnerableSamples:[ \t]*\r?\n", re.MULTILINE)
_TOP_LEVEL_LINE = re.compile(r"^(?=[^\s#-])", re.MULTILINE)
# The identifiers of every sample (not only the first few kept for the body): the hashes a triage asks about
# and the names a driver file goes by. MD5, SHA1 and SHA256 are kinds by their length.
_SAMPLE_HASHES: dict[str, artefacts.Kind | None] = {"MD5": None, "SHA1": None, "SHA256": None, "Imphash": "imphash"}
_NESTED_HASHES: dict[str, artefacts.Kind] = {"Authentihash": "authentihash", "RichPEHeaderHash": "rich_header_hash"}
_SAMPLE_NAMES = ("Filename", "OriginalFilename", "InternalName")
_SAMPLE_LINE = re.compile(r"^( *)(- +)?([A-Za-z][A-Za-z0-9]*):[ \t]*(.*?)[ \t]*$")


def parse(file: SourceFile) -> Iterator[Record]:
    """The one driver entry of a LOLDrivers YAML file."""
    limit = int(file.options.get("max_samples", _DEFAULT_MAX_SAMPLES))
    try:
        raw = file.text()
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text: {exc.reason}") from exc
    doc, sample_count = _load(file, raw, limit)
    samples = [s for s in normalize.as_list(doc.get("KnownVulnerableSamples")) if isinstance(s, dict)]
    sample_count = max(sample_count, len(samples))
    names = texts(normalize.as_list(doc.get("Tags")))
    if not doc.get("Id") or not (names or samples):
        raise ParseError("LOLDrivers entry lacks an Id or any driver name and sample")
    title = _title(doc, names, samples)
    command = normalize.as_mapping(doc.get("Commands"))
    cves = texts([*normalize.as_list(doc.get("CVE")), *normalize.as_list(doc.get("CVEs"))])
    sha256 = texts(s.get("SHA256") for s in samples)
    yield Record(
        source=file.source,
        upstream_id=file.rel,
        title=title,
        body=normalize.join_text(
            f"{title}: {text(doc.get('Category')) or 'driver'} (LOLDrivers)",
            "Also known as: " + ", ".join(names[1:]) if len(names) > 1 else "",
            text(command.get("Description")),
            _usage(command),
            "CVEs: " + ", ".join(cves) if cves else "",
            _samples(samples, limit, sample_count),
        ),
        url=web_url(file),
        techniques=normalize.technique_ids(doc.get("MitreID")),
        platforms=normalize.platforms(file.options.get("platforms", ["windows"])),
        tags=normalize.tags([doc.get("Category")]),
        metadata=compact(
            {
                "id": text(doc["Id"]),
                "category": text(doc.get("Category")),
                "verified": text(doc.get("Verified")).lower() == "true",
                "author": text(doc.get("Author")),
                "created": text(doc.get("Created")),
                "mitre_id": text(doc.get("MitreID")),
                "cves": cves,
                "driver_names": names,
                "samples": sample_count,
                "sha256": sha256[:limit],
                "resources": texts(normalize.as_list(doc.get("Resources")))[:limit],
            }
        ),
        path=file.rel,
        artefacts=_artefacts(raw, names),
    )


def _artefacts(raw: str, names: list[str]) -> tuple[Artefact, ...]:
    """The driver's names (Tags) and every sample's hashes and file names."""
    found: list[Artefact | None] = [artefacts.windows_name("Tags", n) for n in names]
    for name, value in _sample_fields(raw):
        top, _, sub = name.partition(".")
        field = f"KnownVulnerableSamples.{name}"
        if sub and top in _NESTED_HASHES:
            found.append(artefacts.file_hash(field, value, _NESTED_HASHES[top]))
        elif not sub and top in _SAMPLE_HASHES:
            found.append(artefacts.file_hash(field, value, _SAMPLE_HASHES[top]))
        elif not sub and top in _SAMPLE_NAMES:
            found.append(artefacts.windows_name(field, value))
    return artefacts.unique(found)


def _sample_fields(raw: str) -> Iterator[tuple[str, str]]:
    """(field, value) of each sample's own keys and of the keys nested one level under them
    (`Authentihash.SHA256`), read from the text line by line: the YAML load keeps only a few samples
    (`_load`), and a full load of the largest entries costs seconds. A sample's keys sit right of its `- `
    marker (two or four columns: one file writes both), their nested keys further right; what other keys hold
    (imports, certificates) is not read."""
    key = _SAMPLES_KEY.search(raw)
    if key is None:
        return
    following = _TOP_LEVEL_LINE.search(raw, key.end())
    block = raw[key.end() : following.start() if following else len(raw)]
    first = re.match(r"( *)- ", block)
    if first is None:
        return
    marker = len(first.group(1))  # where every sample's `- ` sits
    column_of_keys = marker + 2  # where its keys sit: per sample (one file writes `- ` and `-   ` both)
    parent = ""
    for line in block.splitlines():
        match = _SAMPLE_LINE.match(line)
        if match is None:
            continue
        indent, dash, name, value = match.groups()
        column = len(indent) + len(dash or "")
        if dash and len(indent) == marker:
            column_of_keys = column
        if column == column_of_keys:
            parent = name
            if value:
                yield name, value
        elif column > column_of_keys and parent in _NESTED_HASHES and value:
            yield f"{parent}.{name}", value


def _title(doc: Mapping[str, Any], names: list[str], samples: list[dict[str, Any]]) -> str:
    """The first driver name; else the first sample's file name; else the entry id."""
    return names[0] if names else text(samples[0].get("OriginalFilename")) or text(doc["Id"])


def _load(file: SourceFile, raw: str, keep: int) -> tuple[dict[str, Any], int]:
    """The entry with only its first few samples parsed, and how many samples it lists.

    Some entries list dozens of samples (megabytes of import tables); only a few are kept, so
    the rest is cut from the text before the slow pure-Python YAML load. Any doubt about the cut
    falls back to loading the whole file.
    """
    trimmed, count = _trim_samples(raw, keep)
    if trimmed is not raw:
        try:
            doc = safe_yaml.load(trimmed)
        except ParseError:
            doc = None
        if isinstance(doc, dict):
            return doc, count
    return load_mapping(file), count


def _trim_samples(raw: str, keep: int) -> tuple[str, int]:
    """The text without samples past the first `keep` ones carrying a SHA256, and the sample count."""
    key = _SAMPLES_KEY.search(raw)
    if key is None:
        return raw, 0
    following = _TOP_LEVEL_LINE.search(raw, key.end())
    end = following.start() if following else len(raw)
    block = raw[key.end() : end]
    first = re.match(r"([ \t]*)- ", block)
    if first is None:
        return raw, 0
    indent = re.escape(first.group(1))
    # Nested lists of a sample sit deeper than the samples' own `- ` markers.
    starts = [m.start() for m in re.finditer(rf"^{indent}- ", block, re.MULTILINE)]
    own_sha256 = re.compile(rf"^{indent}(?:- |  )SHA256:[ \t]*['\"]?[0-9A-Fa-f]{{64}}", re.MULTILINE)
    with_hash = 0
    for index, start in enumerate(starts):
        stop = starts[index + 1] if index + 1 < len(starts) else len(block)
        with_hash += bool(own_sha256.search(block, start, stop))
        if index + 1 >= keep and with_hash >= keep and stop < len(block):
            return raw[: key.end()] + block[:stop] + raw[end:], len(starts)
    return raw, len(starts)


def _usage(command: Mapping[str, Any]) -> str:
    lines = [
        f"{label}: {text(command.get(key))}"
        for label, key in (
            ("Use case", "Usecase"),
            ("Privileges", "Privileges"),
            ("Operating system", "OperatingSystem"),
            ("Command", "Command"),
        )
        if text(command.get(key))
    ]
    return "\n".join(lines)


def _samples(samples: Sequence[Mapping[str, Any]], limit: int, total: int) -> str:
    """The first few samples; drivers with dozens of builds would drown the text otherwise."""
    lines = []
    for sample in samples[:limit]:
        parts = [
            f"{k}: {', '.join(texts(normalize.as_list(sample.get(k))))}"
            for k in _SAMPLE_FIELDS
            if texts(normalize.as_list(sample.get(k)))
        ]
        if text(sample.get("SHA256")):
            parts.append(f"SHA256: {text(sample['SHA256'])}")
        if parts:
            lines.append("- " + "; ".join(parts))
    if not lines:
        return ""
    more = f" (first {limit} of {total})" if total > limit else ""
    return f"Known samples{more}:\n" + "\n".join(lines)
