"""GET /v1/lookup."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from secrag.artefacts import MAX_VALUE_CHARS
from serving.api.deps import ArtefactsDep, PrincipalDep
from serving.api.routes import API_PREFIX, query_model
from serving.contract.lookup_models import (
    DEFAULT_LOOKUP_RECORDS,
    MAX_LOOKUP_RECORDS,
    MAX_LOOKUP_VALUES,
    LookupQuery,
    LookupResponse,
)
from serving.contract.requests import QUERY_PATTERN

router = APIRouter(prefix=API_PREFIX, tags=["lookup"])
_FIELDS = LookupQuery.model_fields


@router.get("/lookup", response_model=LookupResponse)
def lookup(
    artefacts: ArtefactsDep,
    principal: PrincipalDep,
    value: Annotated[
        list[Annotated[str, Query(min_length=1, max_length=MAX_VALUE_CHARS, pattern=QUERY_PATTERN)]],
        Query(min_length=1, max_length=MAX_LOOKUP_VALUES, description=_FIELDS["value"].description),
    ],
    limit: Annotated[
        int, Query(ge=1, le=MAX_LOOKUP_RECORDS, description=_FIELDS["limit"].description)
    ] = DEFAULT_LOOKUP_RECORDS,
) -> LookupResponse:
    """Exact artefact lookups: per hash (MD5, SHA-1, SHA-256 and authenticode hashes of LOLDrivers, SHA-256 of
    HijackLibs executables), file name (LOLBAS binaries and scripts, GTFOBins binaries, HijackLibs DLLs and
    executables, LOLDrivers drivers) or Windows path (LOLBAS full paths, HijackLibs expected and vulnerable
    paths), the records the caller may see that hold it, each with the fields it is in. A value no record
    holds has no records (not an error). Matching rules: docs/api.md."""
    query = query_model(LookupQuery, value=value, limit=limit)
    return artefacts.lookup(query, principal)
