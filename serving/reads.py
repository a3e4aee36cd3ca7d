"""Documents and chunks by id, and a document's upstream record: what the caller may see, size-capped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from .auth import Principal
from .errors import NotFound
from .limits import cap
from .responses import Chunk, ChunksResponse, Document, DocumentsResponse, UpstreamResponse
from .statements import Statements
from .upstream import Refetcher


@dataclass(frozen=True)
class Reads:
    pool: ConnectionPool
    statements: Statements
    refetcher: Refetcher
    max_response_bytes: int

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
        found = [Chunk(**{**rows[i], "identifiers": rows[i]["identifiers"].split()}) for i in wanted if i in rows]
        kept, truncated = cap(found, self.max_response_bytes)
        return ChunksResponse(chunks=kept, missing=[i for i in wanted if i not in rows], truncated=truncated)

    def chunk(self, chunk_id: str, principal: Principal) -> Chunk:
        found = self.chunks([chunk_id], principal)
        if not found.chunks:
            raise NotFound(f"no chunk {chunk_id[:200]!r}")
        return found.chunks[0]

    def upstream(self, doc_id: str, principal: Principal) -> UpstreamResponse:
        """The authoritative upstream record for the document's recorded version (size and time capped)."""
        if "\x00" in doc_id:
            raise NotFound("no such document")
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(self.statements.upstream_record, {"doc_id": doc_id, **principal.params()}).fetchone()
        if row is None:
            raise NotFound(f"no document {doc_id[:200]!r}")
        return UpstreamResponse.model_validate(self.refetcher.refetch(row), from_attributes=True)
