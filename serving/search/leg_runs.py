"""How a search's legs run against the store: one statement, the vector and neighbours legs sharing one
walk of the HNSW index when nothing narrows them, and the voter legs on a second connection while a core
is idle (serving/search/side_legs.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from serving.access.sessions import ReaderSessions
from serving.search.side_legs import SideLegs
from serving.search.statements import VOTER_LEGS, Statements


@dataclass(frozen=True)
class LegRuns:
    """Runs the legs one search needs and returns their rows (tagged by `leg`)."""

    statements: Statements
    sessions: ReaderSessions
    side: SideLegs | None = None

    def rows(
        self,
        conn: psycopg.Connection,
        legs: list[str],
        params: dict[str, Any],
        *,
        walk: dict[str, bool],
        ef_search: int,
    ) -> list[dict[str, Any]]:
        """`walk` says how the vector leg reads: Statements.search's exact_vectors and source_index."""
        pooled = not any(walk.values()) and unnarrowed(params) and {"vec", "neighbours"} <= set(legs)
        # a pooled neighbours leg reads the vector leg's walk, so it stays in the vector leg's statement
        aside = [leg for leg in legs if leg in VOTER_LEGS and not (pooled and leg == "neighbours")]
        kept = [leg for leg in legs if leg not in aside]
        if aside and kept and self.side is not None:

            def voters(spare: psycopg.Connection) -> list[dict[str, Any]]:
                self.sessions.ef_search(spare, ef_search)
                return fetch(spare, self.statements.search(aside), params)

            pending = self.side.start(voters)
            if pending is not None:
                own = fetch(conn, self.statements.search(kept, **walk, pooled=pooled), params)
                theirs = pending.result()
                if theirs is None:  # no spare connection came: run them here
                    theirs = fetch(conn, self.statements.search(aside), params)
                return own + theirs
        return fetch(conn, self.statements.search(legs, **walk, pooled=pooled), params)


def unnarrowed(params: dict[str, Any]) -> bool:
    """Whether the vector leg and the neighbours leg would walk the same nearest chunks: no filter narrows
    the vector leg and every source votes (both apply the caller's access check)."""
    return (
        params["sources"] is None
        and params["doc_ids"] is None
        and not params["doc_filters"]
        and params["nb_sources"] is None
    )


def fetch(conn: psycopg.Connection, statement: str | sql.Composed, params: dict[str, Any]) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(statement, params)
        return cur.fetchall()
