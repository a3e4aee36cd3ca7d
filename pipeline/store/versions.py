"""A source version's life in the `source_versions` table: begun, then published, refused or failed."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from secrag.queries import Queries

_COUNTS = ("parsed", "inserted", "updated", "deleted", "unchanged", "skipped")


def begin(q: Queries, conn: psycopg.Connection, source: str, version: str) -> int:
    """A `running` version row, committed at once so a crash still leaves a trace."""
    with conn.transaction():
        row = conn.execute(q.begin_version, {"source": source, "version": version}).fetchone()
    assert row is not None
    return int(row[0])


def finish(
    q: Queries, conn: psycopg.Connection, version_id: int, status: str, reason: str | None, **counts: Any
) -> None:
    """Close the version row with its status, reason, counts (0 when not given) and `details`."""
    params: dict[str, Any] = {
        "id": version_id,
        "status": status,
        "reason": reason,
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
