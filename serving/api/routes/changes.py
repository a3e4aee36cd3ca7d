"""GET /v1/changes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from serving.api.deps import ChangeFeedDep, PrincipalDep
from serving.api.routes import API_PREFIX, query_model
from serving.contract.changes import CURSOR_PATTERN, MAX_CHANGES, ChangesQuery, ChangesResponse
from serving.contract.error_responses import error_responses
from serving.contract.requests import NO_NUL

router = APIRouter(prefix=API_PREFIX, tags=["sources"])
_FIELDS = ChangesQuery.model_fields


@router.get("/changes", response_model=ChangesResponse, responses=error_responses(404))  # an unknown `since` version
def list_changes(
    feed: ChangeFeedDep,
    principal: PrincipalDep,
    sources: Annotated[list[str] | None, Query(max_length=64, description=_FIELDS["sources"].description)] = None,
    since: Annotated[
        str | None, Query(min_length=1, max_length=200, pattern=NO_NUL, description=_FIELDS["since"].description)
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_CHANGES, description=_FIELDS["limit"].description)] = 100,
    cursor: Annotated[str | None, Query(pattern=CURSOR_PATTERN, description=_FIELDS["cursor"].description)] = None,
) -> ChangesResponse:
    """What each publish added, modified (content changed) and removed, newest first: document ids, titles,
    the kind of change, the upstream versions before and after, and when; only documents the caller may see.
    The history is kept for SECRAG_CHANGE_HISTORY_DAYS."""
    query = query_model(ChangesQuery, sources=sources, since=since, limit=limit, cursor=cursor)
    return feed.page(query, principal)
