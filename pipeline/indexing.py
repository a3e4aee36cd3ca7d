"""Records to chunk rows: chunking, enrichment, identifier variants and content hashes."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from secrag.enrichment import enrich, identifier_variants

from .chunking import ChunkConfig, chunk_text
from .sources.records import Record


@dataclass(frozen=True)
class ChunkRow:
    """One row of the `chunks` table; `content_hash` keys its embedding."""

    chunk_id: str
    doc_id: str
    source: str
    ordinal: int
    title: str
    text: str
    enriched_text: str
    identifiers: str
    content_hash: str


def embedding_input(title: str, enriched_text: str) -> str:
    """Exactly the text that is embedded (and hashed) for a chunk."""
    return f"{title}\n{enriched_text}"


def _identifiers(record: Record, doc_level: str, text: str) -> list[str]:
    """The chunk's identifier forms, and the record's own identifiers (field names) that its text holds."""
    found = set(identifier_variants(f"{doc_level}\n{text}"))
    if record.identifiers:
        lowered = text.lower()
        found.update(name.lower() for name in record.identifiers if name.lower() in lowered)
    return sorted(found)


def chunk_rows(record: Record, lookup: Mapping[str, str], cfg: ChunkConfig) -> list[ChunkRow]:
    """The chunk rows of one record; identical input gives identical ids and hashes."""
    doc_level = " ".join([record.upstream_id, record.title, *record.techniques])
    rows = []
    for ordinal, text in enumerate(chunk_text(record.body, cfg)):
        enriched = enrich(text, lookup, extra_techniques=record.techniques if ordinal == 0 else ())
        identifiers = " ".join(_identifiers(record, doc_level, text))
        digest = hashlib.sha256(embedding_input(record.title, enriched).encode("utf-8")).hexdigest()
        rows.append(
            ChunkRow(
                chunk_id=f"{record.doc_id}#{ordinal}",
                doc_id=record.doc_id,
                source=record.source,
                ordinal=ordinal,
                title=record.title,
                text=text,
                enriched_text=enriched,
                identifiers=identifiers,
                content_hash=digest,
            )
        )
    return rows
