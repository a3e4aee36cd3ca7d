"""LOLDrivers entries: one vulnerable or malicious Windows driver with a few sample hashes."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError
from secrag.files import safe_yaml

from .yaml_entry import compact, load_mapping, text, texts, web_url

_DEFAULT_MAX_SAMPLES = 5
# Sample fields that say what the driver is, rendered into the body.
_SAMPLE_FIELDS = ("OriginalFilename", "Company", "Product", "Description", "FileVersion", "Signature")
_SAMPLES_KEY = re.compile(r"^KnownVulnerableSamples:[ \t]*\r?\n", re.MULTILINE)
_TOP_LEVEL_LINE = re.compile(r"^(?=[^\s#-])", re.MULTILINE)


def parse(file: SourceFile) -> Iterator[Record]:
    """The one driver entry of a LOLDrivers YAML file."""
    limit = int(file.options.get("max_samples", _DEFAULT_MAX_SAMPLES))
    doc, sample_count = _load(file, limit)
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
    )


def _title(doc: Mapping[str, Any], names: list[str], samples: list[dict[str, Any]]) -> str:
    """The first driver name; else the first sample's file name; else the entry id."""
    return names[0] if names else text(samples[0].get("OriginalFilename")) or text(doc["Id"])


def _load(file: SourceFile, keep: int) -> tuple[dict[str, Any], int]:
    """The entry with only its first few samples parsed, and how many samples it lists.

    Some entries list dozens of samples (megabytes of import tables); only a few are kept, so
    the rest is cut from the text before the slow pure-Python YAML load. Any doubt about the cut
    falls back to loading the whole file.
    """
    try:
        raw = file.text()
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text: {exc.reason}") from exc
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
