"""A version's records against what the store holds: inserted, updated, unchanged, deleted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Changes:
    """What a publish writes: new and changed documents, the count left alone, and ids to delete.

    `modified` are the updated documents whose content hash changed (the others only chunk differently:
    a new lookup or chunker), what the change history calls modified.
    """

    inserted: list[Change]
    updated: list[Change]
    unchanged: int
    deleted: list[str]
    modified: list[Change]


def diff(
    records: Sequence[Record],
    existing: Mapping[str, tuple[str, str]],
    access: Access,
    lookup: Mapping[str, str],
    chunking: ChunkConfig,
) -> Changes:
    """Compare by document hash and chunk signature; `existing` maps doc id -> (hash, signature).

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
        elif before != (change.doc_hash, chunk_signature(change.chunks)):
            updated.append(change)
            if before[0] != change.doc_hash:
                modified.append(change)
        else:
            unchanged += 1
    deleted = sorted(set(existing) - {r.doc_id for r in records})
    return Changes(inserted, updated, unchanged, deleted, modified)


def chunk_signature(chunks: Sequence[ChunkRow]) -> str:
    """The chunk content hashes in order, as the store keeps them per document."""
    return ",".join(c.content_hash for c in chunks)
