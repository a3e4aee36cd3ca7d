"""The records holding artefact identifiers (hashes, file names, paths): one run of the `lookup` statement over
`document_artefacts` under the caller's access check, each value tried in the forms secrag/artefacts.py
gives it. GET /v1/lookup answers with it (serving/reads/artefacts.py); a search pins what it finds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from secrag.artefacts import names_an_artefact, probes
from serving.access.keys import Principal

# Records holding a queried hash or file name put first, at most (a driver name may be in a few entries).
ARTEFACT_PINS = 20


def holders(
    conn: psycopg.Connection, statement: str, values: Sequence[str], principal: Principal, limit: int
) -> dict[int, list[dict[str, Any]]]:
    """Value index -> the rows of the records holding it (at most limit + 1, by source and title)."""
    forms = [(i, p) for i, value in enumerate(values) for p in probes(value)]
    if not forms:
        return {}
    params = {
        **principal.params(),
        "ords": [i for i, _ in forms],
        "keys": [p.key for _, p in forms],
        "folded": [p.folded for _, p in forms],
        "paths": [p.path for _, p in forms],
        "limit": limit,
    }
    found: dict[int, list[dict[str, Any]]] = {}
    with conn.cursor(row_factory=dict_row) as cur:
        for row in cur.execute(statement, params).fetchall():
            found.setdefault(row["ord"], []).append(row)
    return found


def pinned_holders(conn: psycopg.Connection, statement: str, query: str, principal: Principal) -> list[str]:
    """The documents holding the queried hash or file name, for a search to put first like a document named by
    an exact identifier: one indexed lookup, only for a query that looks like one (a regular expression
    decides; vector-only search asks for none)."""
    if not names_an_artefact(query):
        return []
    found = holders(conn, statement, [query], principal, ARTEFACT_PINS)
    return [row["doc_id"] for row in found.get(0, [])[:ARTEFACT_PINS]]


def in_holder_order(ranked: list[dict[str, Any]], pinned: Sequence[str]) -> list[dict[str, Any]]:
    """The exact rows with the artefact holders in the lookup's order (the records the query names first), after
    any document named by an exact id; the rest as ranked."""
    order = {doc_id: i for i, doc_id in enumerate(pinned)}
    return sorted(ranked, key=lambda r: (not r["exact"], order.get(r["doc_id"], -1) if r["exact"] else 0))
