"""A version's records against what the store holds: inserted, updated, unchanged, deleted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from ..chunking import ChunkConfig
from ..indexing import ChunkRow, chunk_rows
from ..sources.records import Record
from .models import Access
from .rows import document_hash


@dataclass(frozen=True)
class Change:
    """A record to write, with its document hash and chunk rows."""

    record: Record
    doc_hash: str
    chunks: list[ChunkRow]


class Held(NamedTuple):
    """What the store holds of a document: its hash, its chunk signature and its URL."""

    doc_hash: str
    signature: str
    url: str | None = None


@dataclass(frozen=True)
class Changes:
    """What a publish writes: new and changed documents, the count left alone, and ids to delete.

    `modified` are the updated documents whose content changed, what the change history calls modified: not
    those that only chunk differently (a new lookup or chunker), nor those whose only change is their URL
    (a URL pinned to the upstream version changes with every commit of the source).
    """

    inserted: list[Change]
    updated: list[Change]
    unchanged: int
    deleted: list[str]
    modified: list[Change]


def diff(
    records: Sequence[Record],
    existing: Mapping[str, Held],
    access: Access,
    lookup: Mapping[str, str],
    chunking: ChunkConfig,
) -> Changes:
    """Compare by document hash and chunk signature; `existing` maps doc id -> what the store holds.

    The signature (the chunk content hashes in order) makes a lookup or chunking change an update.
    """
    inserted: list[Change] = []
    updated: list[Change] = []
    modified: list[Change] = []
    unchanged = 0
    for record in records:
        change = Change(record, document_hash(record, access), chunk_rows(record, lookup, chunking))
        before = existing.get(record.doc_id)
        if before is None:
            inserted.append(change)
        elif (before.doc_hash, before.signature) != (change.doc_hash, chunk_signature(change.chunks)):
            updated.append(change)
            if before.doc_hash != change.doc_hash and not moved_only(record, access, before):
                modified.append(change)
        else:
            unchanged += 1
    deleted = sorted(set(existing) - {r.doc_id for r in records})
    return Changes(inserted, updated, unchanged, deleted, modified)


def moved_only(record: Record, access: Access, before: Held) -> bool:
    """Whether the record differs from the document held only by its URL."""
    if record.url == (before.url or ""):
        return False
    return document_hash(replace(record, url=before.url or ""), access) == before.doc_hash


def chunk_signature(chunks: Sequence[ChunkRow]) -> str:
    """The chunk content hashes in order, as the store keeps them per document."""
    return ",".join(c.content_hash for c in chunks)
