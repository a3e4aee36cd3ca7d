"""A snapshot's manifest (`manifest.json`, the tar's first member): the schema version, the model and its
digest, each source's version and size, every part's columns, rows, bytes and sha256, and the promoted trained
model's files with theirs (pipeline/snapshot/trained_facts.py); written as canonical JSON, so a signature over
its bytes covers all of it."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from secrag.errors import ParseError, SnapshotRefused
from secrag.files import safe_json

from .parts import PART_TABLES, Column
from .trained_facts import ModelFile, TrainedFacts, parse_trained

FORMAT = "secrag-snapshot/1"
MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"  # ed25519 over manifest.json's bytes, raw 64 bytes
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class ModelFacts:
    """The model whose vectors the snapshot holds: its registry id, the digest of its weights and export
    recipe (secrag/models/onnx_export.py model_digest) and its dimensions."""

    id: str
    digest: str
    dimensions: int


@dataclass(frozen=True)
class SourceFacts:
    """One public source as exported: its served version and size."""

    name: str
    version: str | None
    documents: int
    chunks: int


@dataclass(frozen=True)
class Part:
    """One table's public rows: a binary COPY stream in the tar member `member`."""

    table: str
    member: str
    columns: tuple[Column, ...]
    rows: int
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """What a snapshot holds and what it needs of the store it goes into."""

    schema_version: int
    model: ModelFacts
    sources: tuple[SourceFacts, ...]
    parts: tuple[Part, ...]
    created_at: str
    secrag_version: str
    server_version: int  # the exporting PostgreSQL's server_version_num (binary COPY's types)
    trained: TrainedFacts | None = None  # the promoted sentence model; None: none served (or an older snapshot)
    format: str = FORMAT

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"

    def part(self, table: str) -> Part:
        return next(p for p in self.parts if p.table == table)

    def members(self) -> tuple[Part | ModelFile, ...]:
        """Every member after the manifest (and signature), in the tar's order: the parts, then the trained
        model's files."""
        return (*self.parts, *(self.trained.files if self.trained else ()))

    def rows(self) -> dict[str, int]:
        return {p.table: p.rows for p in self.parts}

    @property
    def created(self) -> datetime:
        """When the snapshot was exported (its `created_at`, checked as a time with its offset when parsed)."""
        return datetime.fromisoformat(self.created_at)


def _field(raw: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:  # noqa: ANN401
    value = raw.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise SnapshotRefused(f"the snapshot's manifest is damaged: {where}{name} is missing or of the wrong type")
    return value


def _part(raw: Any, index: int) -> Part:  # noqa: ANN401 - JSON
    where = f"parts[{index}]."
    if not isinstance(raw, dict):
        raise SnapshotRefused(f"the snapshot's manifest is damaged: {where[:-1]} is not an object")
    columns = _field(raw, "columns", list, where)
    if not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("type"), str) for c in columns
    ):
        raise SnapshotRefused(f"the snapshot's manifest is damaged: {where}columns")
    sha = _field(raw, "sha256", str, where)
    if not _SHA256.match(sha):
        raise SnapshotRefused(f"the snapshot's manifest is damaged: {where}sha256 is not a sha256")
    return Part(
        table=_field(raw, "table", str, where),
        member=_field(raw, "member", str, where),
        columns=tuple(Column(c["name"], c["type"]) for c in columns),
        rows=_field(raw, "rows", int, where),
        bytes=_field(raw, "bytes", int, where),
        sha256=sha,
    )


def parse_manifest(data: bytes) -> Manifest:
    """The manifest of these bytes; SnapshotRefused when it is not one this secrag reads."""
    try:
        raw = safe_json.load(data)
    except (ParseError, UnicodeDecodeError) as exc:
        raise SnapshotRefused(f"the snapshot's manifest is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise SnapshotRefused("the snapshot's manifest is not a JSON object")
    if raw.get("format") != FORMAT:
        raise SnapshotRefused(
            f"the snapshot's format is {raw.get('format')!r}; this secrag reads {FORMAT!r}",
            hint="export the snapshot again with this release of secrag",
        )
    model = _field(raw, "model", dict, "")
    sources = _field(raw, "sources", list, "")
    parts = tuple(_part(p, i) for i, p in enumerate(_field(raw, "parts", list, "")))
    tables = [p.table for p in parts]
    if sorted(tables) != sorted(PART_TABLES):
        raise SnapshotRefused(f"the snapshot's parts are {', '.join(tables)}; expected {', '.join(PART_TABLES)}")
    try:
        facts = tuple(SourceFacts(str(s["name"]), s["version"], int(s["documents"]), int(s["chunks"])) for s in sources)
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotRefused(f"the snapshot's manifest is damaged: sources ({exc})") from exc
    created_at = _field(raw, "created_at", str, "")
    try:
        aware = datetime.fromisoformat(created_at).tzinfo is not None
    except ValueError:
        aware = False
    if not aware:
        raise SnapshotRefused(
            f"the snapshot's manifest is damaged: created_at {created_at[:40]!r} is not a time with its offset"
        )
    return Manifest(
        schema_version=_field(raw, "schema_version", int, ""),
        model=ModelFacts(
            id=_field(model, "id", str, "model."),
            digest=_field(model, "digest", str, "model."),
            dimensions=_field(model, "dimensions", int, "model."),
        ),
        sources=facts,
        parts=tuple(sorted(parts, key=lambda p: PART_TABLES.index(p.table))),
        created_at=created_at,
        secrag_version=_field(raw, "secrag_version", str, ""),
        server_version=_field(raw, "server_version", int, ""),
        trained=parse_trained(raw.get("trained")),
    )
