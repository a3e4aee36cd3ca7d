"""The Store: every write to the store, through named queries in `sql/queries/store.sql`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from secrag.db.queries import Queries
from secrag.error_kinds import ErrorKind

from ..chunking import ChunkConfig
from ..sources.mitre_lookup import MitreTechnique
from ..sources.records import Record, Skipped
from ..sources.shape import ShapeBand
from . import versions
from .models import PUBLIC, Access, PublishResult, SourceRow
from .publish import Publication, publish
from .rows import technique_copy_row


class Store:
    """Sources, their versions, the technique lookup and atomic publish; every method takes a connection."""

    def __init__(self, sql_dir: Path) -> None:
        self.q = Queries(sql_dir, "store")

    def register_source(self, conn: psycopg.Connection, row: SourceRow) -> None:
        conn.execute(self.q.upsert_source, row.__dict__)

    def record_check(self, conn: psycopg.Connection, source: str, version: str) -> None:
        """The upstream answered a probe now and showed `version`."""
        conn.execute(self.q.record_check, {"source": source, "version": version})

    def record_probe_failure(self, conn: psycopg.Connection, source: str, error: BaseException) -> int:
        """A sensor's probe failed: a failed attempt (one row for a run of the same failure); its id."""
        return versions.record_probe_failure(self.q, conn, source, error)

    def record_probe_recovery(self, conn: psycopg.Connection, source: str, version: str) -> bool:
        """A probe that follows failed ones and shows the served version puts the source back to `ok`."""
        return versions.record_probe_recovery(self.q, conn, source, version)

    def prune_history(self, conn: psycopg.Connection, days: int) -> tuple[int, int]:
        """Drop the change history and `unchanged` attempts (never a source's last) older than `days`; how many
        of each."""
        return versions.prune(self.q, conn, days)

    def begin_version(self, conn: psycopg.Connection, source: str, version: str, phase: str = "parse") -> int:
        """A `running` version row, committed at once so a crash still leaves a trace."""
        return versions.begin(self.q, conn, source, version, phase)

    def record_failure(
        self,
        conn: psycopg.Connection,
        source: str,
        version: str | None,
        phase: str | None,
        error: BaseException,
        kind: ErrorKind | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> int:
        """A `failed` row for an attempt that failed before it began a version (probe, fetch)."""
        return versions.record_failure(self.q, conn, source, version, phase, error, kind, details)

    def record_unchanged(self, conn: psycopg.Connection, source: str, version: str) -> int | None:
        """An `unchanged` row when `version` is the one served (its record count), else None."""
        return versions.record_unchanged(self.q, conn, source, version)

    def abandon_dead_attempts(self, conn: psycopg.Connection) -> list[tuple[str, int]]:
        """`running` rows whose process died become `abandoned`; (source, row id) of each."""
        return versions.abandon_dead(self.q, conn)

    def fail_version(
        self,
        conn: psycopg.Connection,
        version_id: int,
        error: BaseException,
        *,
        phase: str | None = None,
        kind: ErrorKind | None = None,
        parsed: int = 0,
        skipped: int = 0,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        """Mark a version failed with the error's kind; the previously published version stays served."""
        versions.give_up(
            self.q,
            conn,
            version_id,
            "failed",
            error,
            phase=phase,
            error_kind=kind,
            parsed=parsed,
            skipped=skipped,
            details=details or {},
        )

    def served_records(self, conn: psycopg.Connection, source: str) -> int:
        """How many records the source's served version holds (0 for a source never published)."""
        row = conn.execute(self.q.served_records, {"source": source}).fetchone()
        return int(row[0]) if row else 0

    def technique_names(self, conn: psycopg.Connection) -> dict[str, str]:
        """Active ATT&CK technique id -> full name, the enrichment lookup."""
        return dict(conn.execute(self.q.technique_names).fetchall())

    def replace_techniques(
        self, conn: psycopg.Connection, techniques: Sequence[MitreTechnique], version: str | Mapping[str, str]
    ) -> int:
        """Swap the whole MITRE lookup in one transaction; `version` is the ATT&CK version, or one per domain."""
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(self.q.replace_techniques_delete)
            with cur.copy(self.q.copy_techniques) as copy:
                for t in techniques:
                    at = version if isinstance(version, str) else version.get(t.domain)
                    copy.write_row(technique_copy_row(t, at))
        return len(techniques)

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
        access: Access = PUBLIC,
        max_shrink: float = 0.5,
        force: bool = False,
        version_id: int | None = None,
        details: Mapping[str, Any] | None = None,
        kept: Sequence[str] = (),
        shape: ShapeBand | None = None,
    ) -> PublishResult:
        """Publish one version of one source in one transaction (readers see old or new, never a mix).

        Refuses (unless `force`) an empty version, one that shrank by more than `max_shrink`, or one in which
        a kind of record shrank past its `shape` band;
        a refusal is recorded with its reason and the previous version stays served. The documents of
        `kept` (doc ids) stay as they are: files that are there but could not be read this time.
        """
        if version_id is None:
            version_id = self.begin_version(conn, source, version)
        pub = Publication(
            source=source,
            version=version,
            version_id=version_id,
            records=records,
            skipped=skipped,
            lookup=lookup,
            chunking=chunking,
            access=access,
            details=details or {},
            max_shrink=max_shrink,
            force=force,
            kept=kept,
            shape=shape,
        )
        return publish(self.q, conn, pub)
