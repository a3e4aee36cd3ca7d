"""Records to chunk rows: chunking, enrichment, identifier variants and content hashes."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from secrag.enrichment import enrich, identifier_variants

from .chunking import ChunkConfig, chunk_spans
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
    # Where the chunk sits in the document body (citations): characters [char_start, char_end), the
    # Markdown heading it falls under, and for a PDF the 1-based pages it spans.
    char_start: int = 0
    char_end: int = 0
    heading: str | None = None
    pages: tuple[int, ...] | None = None


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
    page_starts = record.metadata.get("page_starts")
    rows = []
    for ordinal, span in enumerate(chunk_spans(record.body, cfg)):
        text = span.text
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
                char_start=span.start,
                char_end=span.end,
                heading=span.heading,
                pages=pages_of(page_starts, span.start, span.end) if page_starts else None,
            )
        )
    return rows


def pages_of(page_starts: Sequence[Sequence[int]], start: int, end: int) -> tuple[int, ...]:
    """The 1-based page numbers of a PDF's text that [start, end) spans; `page_starts` pairs each page
    number with the body offset its text starts at (folder_formats: pages without text have none)."""
    pages = []
    for index, (page, offset) in enumerate(page_starts):
        following = page_starts[index + 1][1] if index + 1 < len(page_starts) else None
        if offset < max(end, start + 1) and (following is None or following > start):
            pages.append(int(page))
    return tuple(pages)
