"""A source version's life in the `source_versions` table: begun, then published, refused or failed."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from secrag.queries import Queries

_COUNTS = ("parsed", "inserted", "updated", "deleted", "unchanged", "skipped")


def begin(q: Queries, conn: psycopg.Connection, source: str, version: str, phase: str = "parse") -> int:
    """A `running` version row, committed at once so a crash still leaves a trace."""
    with conn.transaction():
        row = conn.execute(q.begin_version, {"source": source, "version": version, "phase": phase}).fetchone()
    assert row is not None
    return int(row[0])


def record_failure(
    q: Queries, conn: psycopg.Connection, source: str, version: str | None, phase: str, error: BaseException
) -> int:
    """A finished `failed` row for an attempt that failed before it began one; the source says so too."""
    reason = str(error)
    with conn.transaction():
        row = conn.execute(
            q.record_failed_attempt,
            {
                "source": source,
                "version": version,
                "phase": phase,
                "error_class": type(error).__name__,
                "reason": reason,
            },
        ).fetchone()
        conn.execute(q.mark_source_failed, {"source": source, "state": "failed", "reason": reason})
    assert row is not None
    return int(row[0])


def abandon_dead(q: Queries, conn: psycopg.Connection) -> list[tuple[str, int]]:
    """Mark `running` rows of dead sessions abandoned; (source, row id) of each."""
    with conn.transaction():
        return [(str(s), int(i)) for s, i in conn.execute(q.abandon_dead_attempts).fetchall()]


def finish(
    q: Queries, conn: psycopg.Connection, version_id: int, status: str, reason: str | None, **counts: Any
) -> None:
    """Close the version row with its status, reason, counts (0 when not given) and `details`."""
    params: dict[str, Any] = {
        "id": version_id,
        "status": status,
        "reason": reason,
        "phase": counts.pop("phase", None),
        "error_class": counts.pop("error_class", None),
        **dict.fromkeys(_COUNTS, 0),
        **counts,
    }
    params["details"] = Jsonb(params.get("details") or {})
    conn.execute(q.finish_version, params)


def give_up(
    q: Queries, conn: psycopg.Connection, version_id: int, source: str, status: str, reason: str, **counts: Any
) -> None:
    """Close the version as failed or refused and say so on the source; its published version stays served."""
    with conn.transaction():
        finish(q, conn, version_id, status, reason, **counts)
        conn.execute(q.mark_source_failed, {"source": source, "state": status, "reason": reason})
