"""The publish transaction: one source version replaces the last in one step, or is refused."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from secrag.artefacts import unique
from secrag.db.queries import Queries
from secrag.errors import PublishRefused

from ..chunking import ChunkConfig
from ..sources.records import Record, Skipped
from ..sources.shape import FOLDER, ShapeBand
from . import versions
from .counts import refresh_counts
from .diff import Changes, Held, diff
from .models import Access, PublishResult
from .rows import artefact_copy_row, chunk_copy_row, document_copy_row, document_params, raw_copy_row

log = logging.getLogger(__name__)
MAX_SKIP_SAMPLES = 20
FORCE = "publish with force to accept"


@dataclass(frozen=True)
class Publication:
    """One version of one source to publish, how to chunk it, who may see it, and its guard."""

    source: str
    version: str
    version_id: int
    records: Sequence[Record]
    skipped: Sequence[Skipped]
    lookup: Mapping[str, str]
    chunking: ChunkConfig
    access: Access
    details: Mapping[str, Any]
    max_shrink: float = 0.5
    force: bool = False
    kept: Sequence[str] = ()  # doc ids whose documents stay as they are (their files could not be read)
    shape: ShapeBand | None = None  # each kind's band too (sources; a user folder's records have no kinds)

    @property
    def info(self) -> dict[str, Any]:
        """The details recorded on the version: the caller's, plus a sample of the skipped files."""
        sample = [f"{s.path}: {s.reason}" for s in self.skipped[:MAX_SKIP_SAMPLES]]
        return {**self.details, "skipped_sample": sample}


def refusal(previous: int, count: int, max_shrink: float) -> str | None:
    """Why a version of `count` records may not replace one of `previous` records, if it may not."""
    if not count:
        return "empty result: nothing to publish"
    if previous and count < previous * (1 - max_shrink):
        return f"shrank from {previous} to {count} records (more than {max_shrink:.0%}); {FORCE}"
    return None


def publish(q: Queries, conn: psycopg.Connection, pub: Publication) -> PublishResult:
    """Publish in one transaction (readers see old or new, never a mix); a refusal is recorded instead."""
    started = time.monotonic()
    info = pub.info
    try:
        with conn.transaction():
            result = _publish_locked(q, conn, pub, info)
        if result.inserted or result.updated or result.deleted:
            conn.execute(q.analyze_published)  # ~1 s on a full store; estimates must know the new rows
            if not conn.autocommit:
                conn.commit()
    except PublishRefused as refused:
        reason = str(refused)
        counts = {"parsed": len(pub.records), "skipped": len(pub.skipped)}
        versions.give_up(q, conn, pub.version_id, "refused", refused, phase="publish", details=info, **counts)
        log.warning("refused %s@%s: %s", pub.source, pub.version, refused)
        result = PublishResult(
            pub.source,
            pub.version,
            "refused",
            version_id=pub.version_id,
            reason=reason,
            refused=refused.kind,
            details=info,
            **counts,
        )
    return PublishResult(**{**result.__dict__, "seconds": time.monotonic() - started})


def _publish_locked(q: Queries, conn: psycopg.Connection, pub: Publication, info: Mapping[str, Any]) -> PublishResult:
    row = conn.execute(q.lock_source, {"source": pub.source}).fetchone()
    if row is None:
        raise PublishRefused(f"source {pub.source!r} is not registered", kind="config_error")
    existing = {d: Held(h, sig, url) for d, h, sig, url in conn.execute(q.existing_documents, {"source": pub.source})}
    kept = set(pub.kept) & set(existing) - {r.doc_id for r in pub.records}
    count = len(pub.records) + len(kept)
    reason = None if pub.force else refusal(int(row[0]), count, pub.max_shrink)
    kinds = _kind_refusals(q, conn, pub) if count else []
    if kinds and pub.force:  # published anyway: the run and the version say which kinds it let shrink
        info = {**info, "forced_past": kinds}
    elif kinds:  # named before the total: which kind vanished tells where the upstream's layout moved
        reason = "; ".join([*kinds, reason or FORCE])
    if reason:
        raise PublishRefused(reason, kind="empty" if not count else "shrank")
    # A kept document is neither compared nor removed: it stays as it was, chunks, vectors and artefacts too.
    changes = diff(
        pub.records, {d: h for d, h in existing.items() if d not in kept}, pub.access, pub.lookup, pub.chunking
    )
    # The new access first: a document this publish removes is recorded removed under it (narrowed and removed
    # at once, its entry is not shown to those who just lost it), and it joins the document's accesses (0025).
    access = {"tenant": pub.access.tenant, "acl_users": list(pub.access.users), "acl_groups": list(pub.access.groups)}
    conn.execute(q.apply_access, {"source": pub.source, **access})
    _record_changes(q, conn, pub, changes, replaced=row[1])
    conn.execute(q.delete_artefacts, {"source": pub.source, "kept": sorted(kept)})
    written = _write(q, conn, pub, changes)
    artefacts = _write_artefacts(q, conn, pub)
    conn.execute(q.mark_published, {"source": pub.source, "version": pub.version, "records": count})
    refresh_counts(q, conn, pub.source)
    counts: dict[str, Any] = {
        "parsed": len(pub.records),
        "inserted": len(changes.inserted),
        "updated": len(changes.updated),
        "deleted": len(changes.deleted),
        "unchanged": changes.unchanged,
        "skipped": len(pub.skipped),
    }
    details = {**info, "kept": len(kept)} if kept else dict(info)
    versions.finish(q, conn, pub.version_id, "published", phase="publish", details=details, **counts)
    log.info("published %s@%s: %s, %d artefacts", pub.source, pub.version, counts, artefacts)
    return PublishResult(
        source=pub.source,
        version=pub.version,
        status="published",
        chunks_written=written,
        version_id=pub.version_id,
        details=info,
        modified=len(changes.modified),
        artefacts=artefacts,
        kept=len(kept),
        **counts,
    )


def _kind_refusals(q: Queries, conn: psycopg.Connection, pub: Publication) -> list[str]:
    """Each kind of the served version that this one would shrink past its band (the source is locked)."""
    shape = pub.shape
    if shape is None or not (shape.kind == FOLDER or shape.metadata_key):
        return []
    if shape.kind == FOLDER:
        rows = conn.execute(q.served_folder_kinds, {"source": pub.source})
    else:
        rows = conn.execute(q.served_metadata_kinds, {"source": pub.source, "key": shape.metadata_key})
    return shape.refusals({str(k): int(n) for k, n in rows}, shape.counts(pub.records))


def _record_changes(
    q: Queries, conn: psycopg.Connection, pub: Publication, changes: Changes, replaced: str | None
) -> None:
    """The change history of this publish, against the version it replaces: removed documents (read before
    they are deleted, with the access this publish gave them), then added and modified ones."""
    at = {"old_version": replaced, "new_version": pub.version, "version_id": pub.version_id}
    if changes.deleted:
        conn.execute(q.record_removals, {**at, "ids": changes.deleted})
    if not changes.inserted and not changes.modified:
        return
    access = [pub.access.tenant, list(pub.access.users), list(pub.access.groups)]
    with conn.cursor() as cur, cur.copy(q.copy_changes) as copy:
        for kind, changed in (("added", changes.inserted), ("modified", changes.modified)):
            for c in changed:
                row = [pub.source, c.record.doc_id, c.record.title, kind, replaced, pub.version, pub.version_id]
                copy.write_row([*row, *access])


def _write(q: Queries, conn: psycopg.Connection, pub: Publication, changes: Changes) -> int:
    """Delete, update and insert the documents, then copy in their chunks; returns the chunks written."""
    if changes.deleted:
        conn.execute(q.delete_documents, {"ids": changes.deleted})
    if changes.updated:
        conn.execute(q.delete_chunks, {"ids": [c.record.doc_id for c in changes.updated]})
        conn.execute(q.delete_raw, {"ids": [c.record.doc_id for c in changes.updated]})
        with conn.cursor() as cur:
            params = [document_params(c.record, c.doc_hash, pub.version, pub.access) for c in changes.updated]
            cur.executemany(q.update_document, params)
    written = 0
    with conn.cursor() as cur:
        with cur.copy(q.copy_documents) as copy:
            for c in changes.inserted:
                copy.write_row(document_copy_row(c.record, c.doc_hash, pub.source, pub.version, pub.access))
        with cur.copy(q.copy_chunks) as copy:
            for c in (*changes.inserted, *changes.updated):
                for chunk in c.chunks:
                    copy.write_row(chunk_copy_row(chunk))
                    written += 1
        with cur.copy(q.copy_raw) as copy:
            for c in (*changes.inserted, *changes.updated):
                if c.record.raw:
                    copy.write_row(raw_copy_row(c.record))
    return written


def _write_artefacts(q: Queries, conn: psycopg.Connection, pub: Publication) -> int:
    """Copy in the artefact identifiers of every record (the source's old rows are deleted before); how many."""
    written = 0
    with conn.cursor() as cur, cur.copy(q.copy_artefacts) as copy:
        for record in pub.records:
            for a in unique(record.artefacts):  # one row per kind, field and key (the table's key)
                copy.write_row(artefact_copy_row(record.doc_id, pub.source, a))
                written += 1
    return written
