"""The one module that writes the store: sources, versions and atomic publish of a source version."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from secrag.errors import PublishRefused
from secrag.queries import Queries

from .chunking import ChunkConfig
from .indexing import ChunkRow, chunk_rows
from .sources.records import Record, Skipped

log = logging.getLogger(__name__)
MAX_SKIP_SAMPLES = 20


@dataclass(frozen=True)
class SourceRow:
    """The registry facts the `sources` table keeps about a source."""

    name: str
    kind: str  # online | user_folder | static
    description: str = ""
    category: str = ""
    upstream: str | None = None
    branch: str | None = None
    tracking: str | None = None


@dataclass(frozen=True)
class Access:
    """Who may see a source's documents: public (tenant None) or one tenant's users and groups."""

    tenant: str | None = None
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class PublishResult:
    """What one publish did; `status` is published or refused."""

    source: str
    version: str
    status: str
    parsed: int
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks_written: int = 0
    reason: str | None = None
    seconds: float = 0.0
    version_id: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


class Store:
    """Writes through named queries in `sql/queries/store.sql`; every method takes a connection."""

    def __init__(self, sql_dir: Path) -> None:
        self.q = Queries(sql_dir, "store")

    def register_source(self, conn: psycopg.Connection, row: SourceRow) -> None:
        conn.execute(self.q.upsert_source, row.__dict__)

    def record_check(
        self, conn: psycopg.Connection, source: str, version: str | None, error: str | None = None
    ) -> None:
        conn.execute(self.q.record_check, {"source": source, "version": version, "error": error})

    def begin_version(self, conn: psycopg.Connection, source: str, version: str) -> int:
        """A `running` version row, committed at once so a crash still leaves a trace."""
        with conn.transaction():
            row = conn.execute(self.q.begin_version, {"source": source, "version": version}).fetchone()
        assert row is not None
        return int(row[0])

    def fail_version(
        self,
        conn: psycopg.Connection,
        version_id: int,
        source: str,
        reason: str,
        *,
        parsed: int = 0,
        skipped: int = 0,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        """Mark a version failed; the previously published version stays served."""
        with conn.transaction():
            self._finish(conn, version_id, "failed", reason, parsed=parsed, skipped=skipped, details=details or {})
            conn.execute(self.q.mark_source_failed, {"source": source, "state": "failed", "reason": reason})

    def technique_names(self, conn: psycopg.Connection) -> dict[str, str]:
        """Active ATT&CK technique id -> full name, the enrichment lookup."""
        return dict(conn.execute(self.q.technique_names).fetchall())

    def replace_techniques(self, conn: psycopg.Connection, techniques: Sequence[Any], version: str) -> int:
        """Swap the whole MITRE lookup in one transaction (rows: id, name, full_name, tactics, platforms,
        parent, revoked, deprecated, replaced_by)."""
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(self.q.replace_techniques_delete)
            with cur.copy(self.q.copy_techniques) as copy:
                for t in techniques:
                    copy.write_row(
                        [
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
                        ]
                    )
        return len(techniques)

    def _finish(
        self, conn: psycopg.Connection, version_id: int, status: str, reason: str | None, **counts: Any
    ) -> None:  # noqa: ANN401
        params = {
            "id": version_id,
            "status": status,
            "reason": reason,
            "parsed": 0,
            "inserted": 0,
            "updated": 0,
            "deleted": 0,
            "unchanged": 0,
            "skipped": 0,
            **counts,
        }
        params["details"] = Jsonb(params.get("details") or {})
        conn.execute(self.q.finish_version, params)

    def publish(
        self,
        conn: psycopg.Connection,
        *,
        source: str,
        version: str,
        records: Sequence[Record],
        skipped: Sequence[Skipped] = (),
        lookup: Mapping[str, str],
        chunking: ChunkConfig,
        access: Access = Access(),
        max_shrink: float = 0.5,
        force: bool = False,
        version_id: int | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> PublishResult:
        """Publish one version of one source in one transaction (readers see old or new, never a mix).

        Refuses (unless `force`) an empty version or one that shrank by more than `max_shrink`;
        a refusal is recorded with its reason and the previous version stays served.
        """
        started = time.monotonic()
        if version_id is None:
            version_id = self.begin_version(conn, source, version)
        info = {**(details or {}), "skipped_sample": [f"{s.path}: {s.reason}" for s in skipped[:MAX_SKIP_SAMPLES]]}
        try:
            with conn.transaction():
                result = self._publish_locked(
                    conn,
                    source,
                    version,
                    records,
                    skipped,
                    lookup,
                    chunking,
                    access,
                    max_shrink,
                    force,
                    version_id,
                    info,
                )
        except PublishRefused as refused:
            with conn.transaction():
                self._finish(
                    conn, version_id, "refused", str(refused), parsed=len(records), skipped=len(skipped), details=info
                )
                conn.execute(self.q.mark_source_failed, {"source": source, "state": "refused", "reason": str(refused)})
            log.warning("refused %s@%s: %s", source, version, refused)
            return PublishResult(
                source,
                version,
                "refused",
                len(records),
                skipped=len(skipped),
                reason=str(refused),
                seconds=time.monotonic() - started,
                version_id=version_id,
                details=info,
            )
        return PublishResult(**{**result.__dict__, "seconds": time.monotonic() - started})

    def _publish_locked(
        self,
        conn: psycopg.Connection,
        source: str,
        version: str,
        records: Sequence[Record],
        skipped: Sequence[Skipped],
        lookup: Mapping[str, str],
        chunking: ChunkConfig,
        access: Access,
        max_shrink: float,
        force: bool,
        version_id: int,
        info: Mapping[str, Any],
    ) -> PublishResult:
        row = conn.execute(self.q.lock_source, {"source": source}).fetchone()
        if row is None:
            raise PublishRefused(f"source {source!r} is not registered")
        previous = int(row[0])
        if not force:
            if not records:
                raise PublishRefused("empty result: nothing to publish")
            if previous and len(records) < previous * (1 - max_shrink):
                raise PublishRefused(
                    f"shrank from {previous} to {len(records)} records "
                    f"(more than {max_shrink:.0%}); publish with force to accept"
                )
        existing = {
            doc_id: (h, sig)
            for doc_id, h, sig in conn.execute(self.q.existing_documents, {"source": source}).fetchall()
        }
        inserted: list[tuple[Record, str, list[ChunkRow]]] = []
        updated: list[tuple[Record, str, list[ChunkRow]]] = []
        unchanged = 0
        for record in records:
            doc_hash = _document_hash(record, access)
            rows = chunk_rows(record, lookup, chunking)
            signature = ",".join(r.content_hash for r in rows)
            before = existing.get(record.doc_id)
            if before is None:
                inserted.append((record, doc_hash, rows))
            elif before != (doc_hash, signature):
                updated.append((record, doc_hash, rows))
            else:
                unchanged += 1
        deleted = sorted(set(existing) - {r.doc_id for r in records})
        if deleted:
            conn.execute(self.q.delete_documents, {"ids": deleted})
        if updated:
            ids = [r.doc_id for r, _, _ in updated]
            conn.execute(self.q.delete_chunks, {"ids": ids})
            with conn.cursor() as cur:
                cur.executemany(
                    self.q.update_document, [_document_params(r, h, version, access) for r, h, _ in updated]
                )
        with conn.cursor() as cur:
            with cur.copy(self.q.copy_documents) as copy:
                for record, doc_hash, _ in inserted:
                    p = _document_params(record, doc_hash, version, access)
                    copy.write_row(
                        [
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
                        ]
                    )
            written = 0
            with cur.copy(self.q.copy_chunks) as copy:
                for _, _, rows in (*inserted, *updated):
                    for c in rows:
                        copy.write_row(
                            [
                                c.chunk_id,
                                c.doc_id,
                                c.source,
                                c.ordinal,
                                c.title,
                                c.text,
                                c.enriched_text,
                                c.identifiers,
                                c.content_hash,
                            ]
                        )
                        written += 1
        conn.execute(self.q.mark_published, {"source": source, "version": version, "records": len(records)})
        counts: dict[str, Any] = {
            "parsed": len(records),
            "inserted": len(inserted),
            "updated": len(updated),
            "deleted": len(deleted),
            "unchanged": unchanged,
            "skipped": len(skipped),
        }
        self._finish(conn, version_id, "published", None, details=dict(info), **counts)
        log.info("published %s@%s: %s", source, version, counts)
        return PublishResult(
            source=source,
            version=version,
            status="published",
            chunks_written=written,
            version_id=version_id,
            details=info,
            **counts,
        )


def _document_hash(record: Record, access: Access) -> str:
    """The record's content hash, plus where it lives and who may see it (a move or an ACL change is
    an update too)."""
    extra = "|".join([record.path, access.tenant or "", ",".join(access.users), ",".join(access.groups)])
    return hashlib.sha256(f"{record.content_hash}|{extra}".encode()).hexdigest()


def _document_params(record: Record, doc_hash: str, version: str, access: Access) -> dict[str, Any]:
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
    }
