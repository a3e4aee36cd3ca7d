"""The records holding artefact identifiers (hashes, file names, paths): one run of the `lookup` statement over
`document_artefacts` under the caller's access check, each value tried in the forms secrag/artefacts.py
gives it. GET /v1/lookup answers with it (serving/reads/artefacts.py); a search pins what it finds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from secrag.artefacts import probes
from serving.access.keys import Principal


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
