"""Table rows from records, chunks and techniques, in the column order of the store's COPY statements."""

from __future__ import annotations

import hashlib
import zlib
from typing import Any

from psycopg.types.json import Jsonb

from secrag.artefacts import Artefact

from ..indexing import ChunkRow
from ..sources.mitre_lookup import MitreTechnique
from ..sources.records import RECORD_FORMAT, Record
from .models import Access


def document_hash(record: Record, access: Access) -> str:
    """The record's content hash, plus where it lives, who may see it and its upstream form (a move, an
    ACL change or an upstream edit that changes no searchable field is an update too)."""
    extra = "|".join(
        [record.path, access.tenant or "", ",".join(access.users), ",".join(access.groups), f"format{RECORD_FORMAT}"]
    )
    if record.raw:  # documents without one (user folders) keep their hash
        extra += "|" + hashlib.sha256(f"{record.raw_media_type}|{record.raw}".encode()).hexdigest()
    return hashlib.sha256(f"{record.content_hash}|{extra}".encode()).hexdigest()


def document_params(record: Record, doc_hash: str, version: str, access: Access) -> dict[str, Any]:
    """The named parameters of a `documents` row."""
    return {
        "doc_id": record.doc_id,
        "source_version": version,
        "title": record.title,
        "url": record.url or None,
        "body": record.body,
        "metadata": Jsonb(dict(record.metadata)),
        "techniques": list(record.techniques),
        "platforms": list(record.platforms),
        "tags": list(record.tags),
        "content_hash": doc_hash,
        "tenant": access.tenant,
        "acl_users": list(access.users),
        "acl_groups": list(access.groups),
        "upstream_path": record.path or None,
        "media_type": record.raw_media_type or None,
    }


def document_copy_row(record: Record, doc_hash: str, source: str, version: str, access: Access) -> list[Any]:
    """A `documents` row for `copy_documents`."""
    p = document_params(record, doc_hash, version, access)
    return [
        p["doc_id"],
        source,
        version,
        p["title"],
        p["url"],
        p["body"],
        p["metadata"],
        p["techniques"],
        p["platforms"],
        p["tags"],
        doc_hash,
        p["tenant"],
        p["acl_users"],
        p["acl_groups"],
        p["upstream_path"],
        p["media_type"],
    ]


def raw_copy_row(record: Record) -> list[Any]:
    """A `document_raw` row for `copy_raw`: the record's upstream form, zlib-compressed."""
    data = record.raw.encode("utf-8")
    return [
        record.doc_id,
        record.raw_media_type or "text/plain",
        record.raw_whole_file,
        len(data),
        zlib.compress(data, 6),
    ]


def chunk_copy_row(c: ChunkRow) -> list[Any]:
    """A `chunks` row for `copy_chunks`."""
    return [
        c.chunk_id,
        c.doc_id,
        c.source,
        c.ordinal,
        c.title,
        c.text,
        c.enriched_text,
        c.identifiers,
        c.content_hash,
        c.char_start,
        c.char_end,
        c.heading,
        list(c.pages) if c.pages is not None else None,
    ]


def artefact_copy_row(doc_id: str, source: str, a: Artefact) -> list[Any]:
    """A `document_artefacts` row for `copy_artefacts`."""
    return [doc_id, source, a.kind, a.field, a.value, a.key, a.folded, a.pattern]


def technique_copy_row(t: MitreTechnique, version: str | None) -> list[Any]:
    """A `techniques` row for `copy_techniques`."""
    return [
        t.id,
        t.name,
        t.full_name,
        list(t.tactics),
        list(t.platforms),
        t.parent,
        t.revoked,
        t.deprecated,
        t.replaced_by,
        version,
        t.domain,
    ]
