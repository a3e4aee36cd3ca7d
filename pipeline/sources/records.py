"""Frozen records that parsers produce and the store publishes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SourceFile:
    """One upstream file handed to a parser: bytes plus where it came from."""

    source: str
    root: Path
    rel: str  # POSIX path relative to the checkout root, as upstream names it
    data: bytes
    options: Mapping[str, Any] = field(default_factory=dict)
    web_url: str = ""  # template with {path}; parsers call url_for()

    def text(self) -> str:
        return self.data.decode("utf-8-sig")

    def url_for(self, path: str | None = None) -> str:
        if not self.web_url:
            return ""
        return self.web_url.format(path=path if path is not None else self.rel)


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

    @property
    def doc_id(self) -> str:
        return f"{self.source}:{self.upstream_id}"

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

    @property
    def with_techniques(self) -> int:
        return sum(1 for r in self.records if r.techniques)
