"""How a search's legs run against the store: the vector and neighbours legs sharing one walk of the HNSW
index when nothing narrows them, else the voter legs in a statement of their own with a generic plan, on a
second connection while a core is idle (serving/search/side_legs.py), in the same round trip otherwise."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
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
        voters = Sent(self.statements.search(aside), params, _name(aside), generic=True) if aside else None
        if not kept and voters is not None:
            return fetch_all(conn, self.sessions.generic_plan, [voters])[0]
        own = Sent(self.statements.search(kept, **walk, pooled=pooled), params, _name(kept))
        if voters is None:
            return fetch(conn, own.statement, params, own.name)
        if self.side is not None:

            def on_spare(spare: psycopg.Connection) -> list[dict[str, Any]]:
                self.sessions.ef_search(spare, ef_search)
                return fetch_all(spare, self.sessions.generic_plan, [voters])[0]

            pending = self.side.start(on_spare)
            if pending is not None:
                mine = fetch(conn, own.statement, params, own.name)
                theirs = pending.result()
                if theirs is None:  # no spare connection came: run them here
                    theirs = fetch_all(conn, self.sessions.generic_plan, [voters])[0]
                return mine + theirs
        # both statements in one round trip: the voter legs apart from the vector leg plan once (generic_plan)
        mine, theirs = fetch_all(conn, self.sessions.generic_plan, [own, voters])
        return mine + theirs


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


@dataclass(frozen=True)
class Sent:
    """One statement to send: its text with `%(name)s` placeholders, its values, its name for the error log,
    and whether it is planned once for any values (the `generic_plan` block before it)."""

    statement: str
    params: dict[str, Any]
    name: str
    generic: bool = False


def fetch(conn: psycopg.Connection, statement: str, params: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The statement's rows as dicts, planned for its values (fetch_all)."""
    return fetch_all(conn, "", [Sent(statement, params, name)])[0]


def fetch_all(
    conn: psycopg.Connection, generic_plan: str, sent: list[Sent], *, then: Sequence[str] = ()
) -> list[list[dict[str, Any]]]:
    """Each statement's rows as dicts, all sent in one round trip. A statement is sent with PostgreSQL's own
    placeholders, converted once per statement (`native`): psycopg parses a query's placeholders on every
    execution once it is longer than 4,096 bytes, and a search's statement is 2 to 33 KB (0.22 ms of Python a
    run of a 19 KB one). A `generic` one follows `generic_plan` (plan_cache_mode for the rest of the round
    trip's transaction, never the session's) and is prepared at once, so its plan is made once per connection;
    the others before it keep the session's custom plans. `then`: statements without parameters sent after them
    (ReaderSessions.reset_after). A failure carries the statement's `name` for the error log
    (serving.contract.errors.statement_of)."""
    if len(sent) == 1 and not sent[0].generic and not then:
        return [_rows(conn, sent[0], prepare=None)]
    try:
        with conn.pipeline():
            cursors: list[psycopg.RawCursor[dict[str, Any]]] = []
            planned_once = False
            for one in sent:
                if one.generic and not planned_once:
                    conn.execute(generic_plan)
                    planned_once = True
                elif not one.generic and planned_once:
                    raise ValueError("a statement after a generic one would be planned generic too")
                cursors.append(_send(conn, one, prepare=True if one.generic else None))
            for text in then:
                conn.execute(text, prepare=False)
        # read once the pipeline's sync brought every result: fetching inside it is a round trip of its own
        return [cur.fetchall() for cur in cursors]
    except psycopg.Error as exc:
        name_statement(exc, "+".join(one.name for one in sent))
        raise


def _send(conn: psycopg.Connection, one: Sent, *, prepare: bool | None) -> psycopg.RawCursor[dict[str, Any]]:
    text, names = native(one.statement)
    cur = psycopg.RawCursor(conn, row_factory=dict_row)
    return cur.execute(text, [one.params[name] for name in names], prepare=prepare)


def _rows(conn: psycopg.Connection, one: Sent, *, prepare: bool | None) -> list[dict[str, Any]]:
    try:
        with _send(conn, one, prepare=prepare) as cur:
            return cur.fetchall()
    except psycopg.Error as exc:
        name_statement(exc, one.name)
        raise


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
