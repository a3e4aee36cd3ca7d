"""Documents and chunks by id."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..deps import PrincipalDep, ServiceDep
from ..responses import Chunk, ChunksResponse, Document, DocumentsResponse, UpstreamResponse
from ..schemas import ErrorResponse, IdsRequest

router = APIRouter(tags=["documents"])
_404: dict[int | str, dict[str, Any]] = {404: {"model": ErrorResponse}}


@router.get(
    "/docs/{doc_id:path}/upstream",
    response_model=UpstreamResponse,
    responses={
        **_404,
        413: {"model": ErrorResponse},
        501: {"model": ErrorResponse},
        502: {"model": ErrorResponse},
        504: {"model": ErrorResponse},
    },
)
def get_upstream(doc_id: str, service: ServiceDep, principal: PrincipalDep) -> UpstreamResponse:
    """The authoritative upstream record at the document's recorded version (the repository file at that
    commit or release tag, or the feed entry), read from the upstream or its mirror; capped in size
    (SECRAG_UPSTREAM_MAX_BYTES, 413) and time (SECRAG_UPSTREAM_TIMEOUT, 504)."""
    return service.upstream(doc_id, principal)


@router.get("/docs/{doc_id:path}", response_model=Document, responses=_404)
def get_document(doc_id: str, service: ServiceDep, principal: PrincipalDep) -> Document:
    """One document (404 when absent or not visible to the caller)."""
    return service.document(doc_id, principal)


@router.post("/docs", response_model=DocumentsResponse)
def get_documents(body: IdsRequest, service: ServiceDep, principal: PrincipalDep) -> DocumentsResponse:
    """Up to 100 documents; unknown or invisible ids are listed in `missing`."""
    return service.documents(body.ids, principal)


@router.get("/chunks/{chunk_id:path}", response_model=Chunk, responses=_404)
def get_chunk(chunk_id: str, service: ServiceDep, principal: PrincipalDep) -> Chunk:
    """One chunk (`<doc_id>#<ordinal>`, with `#` URL-encoded as %23)."""
    return service.chunk(chunk_id, principal)


@router.post("/chunks", response_model=ChunksResponse)
def get_chunks(body: IdsRequest, service: ServiceDep, principal: PrincipalDep) -> ChunksResponse:
    """Up to 100 chunks; unknown or invisible ids are listed in `missing`."""
    return service.chunks(body.ids, principal)
