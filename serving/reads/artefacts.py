"""GET /v1/lookup: per hash, file name or path, the records the caller may see that hold it, with the fields it
is in (serving/search/artefacts.py reads them)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from psycopg_pool import ConnectionPool

from serving.access.keys import Principal
from serving.contract.lookup_models import ArtefactMatch, LookupQuery, LookupRecord, LookupResponse, ValueLookup
from serving.search.artefacts import holders
from serving.search.statements import Statements


@dataclass(frozen=True)
class ArtefactLookup:
    pool: ConnectionPool
    statements: Statements

    def lookup(self, query: LookupQuery, principal: Principal) -> LookupResponse:
        started = time.perf_counter()
        values = list(dict.fromkeys(query.value))
        with self.pool.connection() as conn:
            found = holders(conn, self.statements.lookup, values, principal, query.limit)
        results = [
            ValueLookup(
                value=value,
                records=[_record(r) for r in found.get(i, [])[: query.limit]],
                truncated=len(found.get(i, [])) > query.limit,
            )
            for i, value in enumerate(values)
        ]
        return LookupResponse(results=results, took_ms=round((time.perf_counter() - started) * 1000, 2))


def _record(row: dict[str, Any]) -> LookupRecord:
    matches = [
        ArtefactMatch(kind=kind, field=field, value=value)
        for kind, field, value in zip(row["kinds"], row["fields"], row["artefact_values"], strict=True)
    ]
    return LookupRecord(doc_id=row["doc_id"], source=row["source"], title=row["title"], url=row["url"], matches=matches)
