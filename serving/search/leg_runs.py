"""How a search's legs run against the store: one statement, the vector and neighbours legs sharing one
walk of the HNSW index when nothing narrows them, and the voter legs on a second connection while a core
is idle (serving/search/side_legs.py)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row

from serving.access.sessions import ReaderSessions
from serving.contract.errors import name_statement
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
        """`walk` says how the vector leg reads: Statements.search's flags (LegShaper.vector_walk, held_nearest)."""
        pooled = not any(walk.values()) and unnarrowed(params) and {"vec", "neighbours"} <= set(legs)
        # a pooled neighbours leg reads the vector leg's walk, so it stays in the vector leg's statement
        aside = [leg for leg in legs if leg in VOTER_LEGS and not (pooled and leg == "neighbours")]
        kept = [leg for leg in legs if leg not in aside]
        if aside and kept and self.side is not None:

            def voters(spare: psycopg.Connection) -> list[dict[str, Any]]:
                self.sessions.ef_search(spare, ef_search)
                return fetch(spare, self.statements.search(aside), params, _name(aside))

            pending = self.side.start(voters)
            if pending is not None:
                own = fetch(conn, self.statements.search(kept, **walk, pooled=pooled), params, _name(kept))
                theirs = pending.result()
                if theirs is None:  # no spare connection came: run them here
                    theirs = fetch(conn, self.statements.search(aside), params, _name(aside))
                return own + theirs
        return fetch(conn, self.statements.search(legs, **walk, pooled=pooled), params, _name(legs))


def _name(legs: list[str]) -> str:
    return "search:" + "+".join(legs)


def unnarrowed(params: dict[str, Any]) -> bool:
    """Whether the vector leg and the neighbours leg would walk the same nearest chunks: no filter narrows
    the vector leg and every source votes (both apply the caller's access check)."""
    return (
        params["sources"] is None
        and params["doc_ids"] is None
        and not params["doc_filters"]
        and params["nb_sources"] is None
    )


def fetch(conn: psycopg.Connection, statement: str, params: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The statement's rows as dicts. It is sent with PostgreSQL's own placeholders, converted once per
    statement (`native`): psycopg parses a query's placeholders on every execution once it is longer than
    4,096 bytes, and a search's statement is 2 to 33 KB (0.22 ms of Python a run of a 19 KB one). A failure
    carries the statement's `name` for the error log (serving.contract.errors.statement_of)."""
    text, names = native(statement)
    with psycopg.RawCursor(conn, row_factory=dict_row) as cur:
        try:
            cur.execute(text, [params[name] for name in names])
        except psycopg.Error as exc:
            name_statement(exc, name)
            raise
        return cur.fetchall()


_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


@functools.lru_cache(maxsize=2048)
def native(statement: str) -> tuple[str, tuple[str, ...]]:
    """The statement with `$1`, `$2`, ... for its `%(name)s` placeholders (one number per name, in the order
    of first use) and `%` for `%%`, and the names in number order."""
    if "%" in _PLACEHOLDER.sub("", statement):
        raise ValueError(f"a % that is neither %(name)s nor %%: {statement[:80]!r}")
    numbers: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        return f"${numbers.setdefault(name, len(numbers) + 1)}"

    return _PLACEHOLDER.sub(number, statement), tuple(numbers)
