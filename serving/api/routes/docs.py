"""Documents and chunks by id."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from serving.api.deps import PrincipalDep, ReadsDep
from serving.api.routes import API_PREFIX
from serving.contract.error_responses import error_responses
from serving.contract.requests import MAX_COLUMNS, Column, IdsRequest
from serving.contract.responses import (
    Chunk,
    ChunksResponse,
    Document,
    DocumentsResponse,
    UpstreamBatchResponse,
    UpstreamResponse,
)
from serving.contract.upstream_requests import UpstreamQuery, UpstreamRequest

router = APIRouter(prefix=API_PREFIX, tags=["documents"])
# Besides the gated statuses every /v1 operation declares (serving/api/app.py):
_404 = error_responses(404)
_UPSTREAM_ERRORS = error_responses(404, 501, 502)  # a refetch's own: 413 and 504 are among the gated
DocId = Annotated[str, Path(description="`<source>:<the record's id>`, e.g. mitre_attack:T1003.")]
ChunkId = Annotated[str, Path(description="`<doc_id>#<ordinal>`, with `#` sent as %23.")]


@router.post(
    "/docs/upstream",
    response_model=UpstreamBatchResponse,
)
def get_upstreams(body: UpstreamRequest, reads: ReadsDep, principal: PrincipalDep) -> UpstreamBatchResponse:
    """The upstream forms of up to 100 documents' records (live: at most SECRAG_MAX_LIVE_REFETCH), as
    GET /v1/docs/{doc_id}/upstream gives each; a document that fails is listed in `errors` with its status,
    unknown or invisible ids in `missing`; the response is capped (SECRAG_MAX_RESPONSE_BYTES, `truncated`)."""
    return reads.upstream_batch(body, principal)


@router.get("/docs/{doc_id:path}/upstream", response_model=UpstreamResponse, responses=_UPSTREAM_ERRORS)
def get_upstream(
    doc_id: DocId,
    reads: ReadsDep,
    principal: PrincipalDep,
    live: Annotated[bool, Query(description=UpstreamQuery.model_fields["live"].description)] = False,
    columns: Annotated[
        list[Column] | None,
        Query(max_length=MAX_COLUMNS, description=UpstreamQuery.model_fields["columns"].description),
    ] = None,
) -> UpstreamResponse:
    """The upstream form of the document's record at the version it was published from: the form the
    pipeline stored at publish (one Sigma file, one ATT&CK STIX object, one CAPEC pattern, one KEV entry;
    no upstream access), or with `live=true` the upstream's own (the repository file at that commit or
    release tag, or the feed entry, read from the upstream or its mirror). Capped in size
    (SECRAG_UPSTREAM_MAX_BYTES, 413) and, live, in time (SECRAG_UPSTREAM_TIMEOUT, 504)."""
    return reads.upstream(doc_id, principal, live=live, columns=columns)


@router.get("/docs/{doc_id:path}", response_model=Document, responses=_404)
def get_document(doc_id: DocId, reads: ReadsDep, principal: PrincipalDep) -> Document:
    """One document (404 when absent or not visible to the caller)."""
    return reads.document(doc_id, principal)


@router.post("/docs", response_model=DocumentsResponse)
def get_documents(body: IdsRequest, reads: ReadsDep, principal: PrincipalDep) -> DocumentsResponse:
    """Up to 100 documents; unknown or invisible ids are listed in `missing`."""
    return reads.documents(body.ids, principal)


@router.get("/chunks/{chunk_id:path}", response_model=Chunk, responses=_404)
def get_chunk(chunk_id: ChunkId, reads: ReadsDep, principal: PrincipalDep) -> Chunk:
    """One chunk (404 when absent or not visible to the caller)."""
    return reads.chunk(chunk_id, principal)


@router.post("/chunks", response_model=ChunksResponse)
def get_chunks(body: IdsRequest, reads: ReadsDep, principal: PrincipalDep) -> ChunksResponse:
    """Up to 100 chunks; unknown or invisible ids are listed in `missing`."""
    return reads.chunks(body.ids, principal)
