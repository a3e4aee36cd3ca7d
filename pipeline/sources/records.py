"""Frozen records that parsers produce and the store publishes."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secrag.artefacts import Artefact
from secrag.net import media_types
from secrag.net.media_types import JSON as JSON  # re-exported: the parsers name their records' media type
from secrag.net.media_types import TURTLE as TURTLE
from secrag.net.media_types import YAML as YAML


@dataclass(frozen=True)
class SourceFile:
    """One upstream file handed to a parser: bytes plus where it came from."""

    source: str
    root: Path
    rel: str  # POSIX path relative to the checkout root, as upstream names it
    data: bytes
    options: Mapping[str, Any] = field(default_factory=dict)
    web_url: str = ""  # template with {path}; parsers call url_for()
    # Facts a parser reports about the file beside its records (name -> names), e.g. the deprecated ATT&CK
    # fields a bundle no longer holds; parse_source gathers them into the outcome.
    notes: dict[str, list[str]] = field(default_factory=dict, compare=False)

    def text(self) -> str:
        return self.data.decode("utf-8-sig")

    def url_for(self, path: str | None = None) -> str:
        if not self.web_url:
            return ""
        return self.web_url.format(path=path if path is not None else self.rel)


# What a published record carries; part of every publish fingerprint (pipeline/refresh_inputs.py) and
# document hash (store/rows.py), so a change republishes every source and rewrites every document once.
# 2: each record keeps its upstream form (migration 0013); 3: chunks know their place in the document
# and documents their media type (0015).
RECORD_FORMAT = 3


@dataclass(frozen=True)
class Record:
    """One searchable document, normalised; `doc_id` is `<source>:<upstream id>`."""

    source: str
    upstream_id: str
    title: str
    body: str
    url: str = ""
    techniques: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""
    # Names keyword search must find as written (a schema's field names): kept with each chunk that holds one.
    identifiers: tuple[str, ...] = ()
    # The record's upstream form (stored compressed at publish, for GET /v1/docs/{id}/upstream): one STIX
    # object, one feed entry, one YAML document; the whole file when the file is the record
    # (parsing.iter_file_records). Not part of content_hash or equality (store/rows.document_hash adds it).
    raw: str = field(default="", compare=False)
    raw_media_type: str = field(default="", compare=False)
    raw_whole_file: bool = field(default=False, compare=False)
    # Hashes, file names and paths the record holds, for exact lookups (secrag/artefacts.py). Not part of
    # content_hash: a publish rewrites the source's artefact rows whole, whichever documents changed.
    artefacts: tuple[Artefact, ...] = field(default=(), compare=False)

    @property
    def doc_id(self) -> str:
        return doc_id(self.source, self.upstream_id)

    @property
    def content_hash(self) -> str:
        payload = json.dumps(
            [
                self.title,
                self.url,
                self.body,
                list(self.techniques),
                list(self.platforms),
                list(self.tags),
                self.metadata,
                *([list(self.identifiers)] if self.identifiers else []),  # older records hash as before
            ],
            sort_keys=True,
            ensure_ascii=False,
            default=str,
            separators=(",", ":"),
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def with_raw(record: Record, value: Any, media_type: str) -> Record:  # noqa: ANN401 - a parsed record
    """`record` with `value` (one upstream record, as parsed) as its upstream form in `media_type`."""
    return dataclasses.replace(record, raw=media_types.dump(value, media_type), raw_media_type=media_type)


@dataclass(frozen=True)
class Skipped:
    """A file (or entry) that was not turned into a record, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class ParseOutcome:
    """Everything one parse of one source produced."""

    source: str
    records: tuple[Record, ...]
    skipped: tuple[Skipped, ...]
    files_seen: int
    seconds: float
    # The files' notes (SourceFile.notes): for each name, the names every file that reported it reported.
    notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def with_techniques(self) -> int:
        return sum(1 for r in self.records if r.techniques)


def doc_id(source: str, upstream_id: str) -> str:
    """A document's primary key: its source's name and its upstream id."""
    return f"{source}:{upstream_id}"
