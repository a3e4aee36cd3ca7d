"""A refresh attempt's life in the `source_versions` table: begun, then published, unchanged, refused or
failed. A source's state is derived from these rows (the view source_status), never written beside them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from secrag.db.queries import Queries
from secrag.error_kinds import ErrorKind, kind_of

_COUNTS = ("parsed", "inserted", "updated", "deleted", "unchanged", "skipped")


def begin(q: Queries, conn: psycopg.Connection, source: str, version: str, phase: str = "parse") -> int:
    """A `running` version row, committed at once so a crash still leaves a trace."""
    with conn.transaction():
        row = conn.execute(q.begin_version, {"source": source, "version": version, "phase": phase}).fetchone()
    assert row is not None
    return int(row[0])


def record_failure(
    q: Queries,
    conn: psycopg.Connection,
    source: str,
    version: str | None,
    phase: str | None,
    error: BaseException,
    kind: ErrorKind | None = None,
    details: Mapping[str, Any] | None = None,
) -> int:
    """A finished `failed` row for an attempt that failed before it began one (a probe, a fetch; no phase:
    the configuration refused it before anything was read), with `details` of what it names."""
    with conn.transaction():
        row = conn.execute(
            q.record_failed_attempt,
            {
                "source": source,
                "version": version,
                "phase": phase,
                "error_class": type(error).__name__,
                "error_kind": kind or kind_of(error),
                "error_detail": str(error),
                "details": Jsonb(dict(details or {})),
            },
        ).fetchone()
    assert row is not None
    return int(row[0])


def record_probe_failure(q: Queries, conn: psycopg.Connection, source: str, error: BaseException) -> int:
    """A sensor's failed probe, recorded as a failed attempt (one row per run of the same failure); its id."""
    params = {
        "source": source,
        "error_class": type(error).__name__,
        "error_kind": kind_of(error, "probe"),
        "error_detail": str(error),
    }
    with conn.transaction():
        row = conn.execute(q.record_probe_failure, params).fetchone()
    assert row is not None
    return int(row[0])


def record_unchanged(q: Queries, conn: psycopg.Connection, source: str, version: str) -> int | None:
    """A finished `unchanged` row when `version` is the one served; its record count, else None."""
    with conn.transaction():
        row = conn.execute(q.record_unchanged_attempt, {"source": source, "version": version}).fetchone()
    return None if row is None else int(row[0])


def record_probe_recovery(q: Queries, conn: psycopg.Connection, source: str, version: str) -> bool:
    """After failed probes, a successful one that shows the served version: an `unchanged` attempt; whether
    one was recorded."""
    with conn.transaction():
        return conn.execute(q.record_probe_recovery, {"source": source, "version": version}).fetchone() is not None


def prune(q: Queries, conn: psycopg.Connection, days: int) -> tuple[int, int]:
    """Drop change history and `unchanged` attempts (never a source's last) older than `days`; how many of each.
    The remembered accesses of removed documents go with their last entry."""
    with conn.transaction():
        changes = conn.execute(q.prune_changes, {"days": days}).rowcount
        conn.execute(q.prune_accesses)
        attempts = conn.execute(q.prune_unchanged_attempts, {"days": days}).rowcount
    return changes, attempts


def abandon_dead(q: Queries, conn: psycopg.Connection) -> list[tuple[str, int]]:
    """Mark `running` rows of dead sessions abandoned; (source, row id) of each."""
    with conn.transaction():
        return [(str(s), int(i)) for s, i in conn.execute(q.abandon_dead_attempts).fetchall()]


def finish(q: Queries, conn: psycopg.Connection, version_id: int, status: str, **counts: Any) -> None:
    """Close the version row with its status, counts (0 when not given), `details` and, for a failure,
    `error_kind`, `error_class` and `error_detail`."""
    params: dict[str, Any] = {
        "id": version_id,
        "status": status,
        "phase": counts.pop("phase", None),
        "error_kind": counts.pop("error_kind", None),
        "error_class": counts.pop("error_class", None),
        "error_detail": counts.pop("error_detail", None),
        **dict.fromkeys(_COUNTS, 0),
        **counts,
    }
    params["details"] = Jsonb(params.get("details") or {})
    conn.execute(q.finish_version, params)


def give_up(
    q: Queries, conn: psycopg.Connection, version_id: int, status: str, error: BaseException, **counts: Any
) -> None:
    """Close the version as failed or refused, with the error's kind; the published version stays served."""
    with conn.transaction():
        finish(
            q,
            conn,
            version_id,
            status,
            error_kind=counts.pop("error_kind", None) or kind_of(error),
            error_class=type(error).__name__,
            error_detail=str(error),
            **counts,
        )
