"""Documents and chunks by id, and documents' upstream records: what the caller may see, size-capped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from serving.access.keys import Principal
from serving.contract.errors import ApiError, NotFound, TooManyRequests
from serving.contract.limits import cap
from serving.contract.responses import (
    Chunk,
    ChunksResponse,
    Document,
    DocumentsResponse,
    UpstreamBatchResponse,
    UpstreamError,
    UpstreamResponse,
)
from serving.contract.upstream_requests import UpstreamRequest
from serving.reads.upstream import Refetcher, UpstreamRecord
from serving.search.result_rows import location_of
from serving.search.statements import Statements


@dataclass(frozen=True)
class Reads:
    pool: ConnectionPool
    statements: Statements
    refetcher: Refetcher
    max_response_bytes: int
    max_live_refetch: int = 0  # SECRAG_MAX_LIVE_REFETCH: the ids of one live batch read (upstream_batch)

    def documents(self, ids: Sequence[str], principal: Principal) -> DocumentsResponse:
        wanted = list(dict.fromkeys(ids))
        ids = [i for i in wanted if "\x00" not in i]  # PostgreSQL text cannot hold NUL: such ids never exist
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = {
                r["doc_id"]: r
                for r in cur.execute(self.statements.documents_by_id, {"ids": ids, **principal.params()}).fetchall()
            }
        found = [
            Document(**{**rows[i], "metadata": rows[i]["metadata"] or {}, "chunk_ids": rows[i]["chunk_ids"] or []})
            for i in wanted
            if i in rows
        ]
        kept, truncated = cap(found, self.max_response_bytes)
        return DocumentsResponse(documents=kept, missing=[i for i in wanted if i not in rows], truncated=truncated)

    def document(self, doc_id: str, principal: Principal) -> Document:
        found = self.documents([doc_id], principal)
        if not found.documents:
            raise NotFound(f"no document {doc_id[:200]!r}")
        return found.documents[0]

    def chunks(self, ids: Sequence[str], principal: Principal) -> ChunksResponse:
        wanted = list(dict.fromkeys(ids))
        ids = [i for i in wanted if "\x00" not in i]
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = {
                r["chunk_id"]: r
                for r in cur.execute(self.statements.chunks_by_id, {"ids": ids, **principal.params()}).fetchall()
            }
        found = [_chunk(rows[i]) for i in wanted if i in rows]
        kept, truncated = cap(found, self.max_response_bytes)
        return ChunksResponse(chunks=kept, missing=[i for i in wanted if i not in rows], truncated=truncated)

    def chunk(self, chunk_id: str, principal: Principal) -> Chunk:
        found = self.chunks([chunk_id], principal)
        if not found.chunks:
            raise NotFound(f"no chunk {chunk_id[:200]!r}")
        return found.chunks[0]

    def upstream(
        self, doc_id: str, principal: Principal, *, live: bool = False, columns: Sequence[str] | None = None
    ) -> UpstreamResponse:
        """The upstream form of one document's record (serving/reads/upstream.py); its errors as they are."""
        rows = self._upstream_rows([doc_id], principal)
        if doc_id not in rows:
            raise NotFound(f"no document {doc_id[:200]!r}")
        return _upstream_response(self.refetcher.refetch(rows[doc_id], live=live, columns=columns))

    def upstream_batch(self, req: UpstreamRequest, principal: Principal) -> UpstreamBatchResponse:
        """Several documents' upstream forms. A live batch reads the first `max_live_refetch` ids (each live
        read may take the upstream timeout); each id beyond is an error of its own (429), so a request the
        schema admits is always answered."""
        ids = list(dict.fromkeys(req.doc_ids))
        cap = self.max_live_refetch if req.live else len(ids)
        found = self.upstreams(ids[:cap], principal, live=req.live, columns=req.columns)
        beyond = [
            UpstreamError(
                doc_id=doc_id,
                status=429,
                kind=TooManyRequests.kind,
                error=f"a live batch reads at most {cap} documents (this deployment's SECRAG_MAX_LIVE_REFETCH); "
                "ask again for the rest, or for their stored forms (live=false)",
            )
            for doc_id in ids[cap:]
        ]
        return found.model_copy(update={"errors": [*found.errors, *beyond]})

    def upstreams(
        self, ids: Sequence[str], principal: Principal, *, live: bool = False, columns: Sequence[str] | None = None
    ) -> UpstreamBatchResponse:
        """The upstream forms of several documents: each fails on its own (`errors`), the response is
        size-capped (`truncated`)."""
        wanted = list(dict.fromkeys(ids))
        rows = self._upstream_rows(wanted, principal)
        found, errors = [], []
        for doc_id in wanted:
            if doc_id not in rows:
                continue
            try:
                found.append(_upstream_response(self.refetcher.refetch(rows[doc_id], live=live, columns=columns)))
            except ApiError as exc:  # the status and message that document alone would have had
                errors.append(UpstreamError(doc_id=doc_id, status=exc.status, kind=exc.kind, error=str(exc)))
        kept, truncated = cap(found, self.max_response_bytes)
        missing = [i for i in wanted if i not in rows]
        return UpstreamBatchResponse(records=kept, missing=missing, errors=errors, truncated=truncated)

    def _upstream_rows(self, ids: Sequence[str], principal: Principal) -> dict[str, dict[str, Any]]:
        ids = [i for i in ids if "\x00" not in i]  # PostgreSQL text cannot hold NUL: such ids never exist
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            found = cur.execute(self.statements.upstream_records, {"ids": ids, **principal.params()}).fetchall()
        return {r["doc_id"]: r for r in found}


def _chunk(row: dict[str, Any]) -> Chunk:
    fields = {k: v for k, v in row.items() if k in Chunk.model_fields}
    return Chunk(**{**fields, "identifiers": row["identifiers"].split(), "location": location_of(row)})


def _upstream_response(record: UpstreamRecord) -> UpstreamResponse:
    return UpstreamResponse.model_validate(record, from_attributes=True)
