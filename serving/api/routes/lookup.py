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
    holds has no records (not an error); a value's records come those it names first, then by source and title.

    Hashes (32, 40 or 64 hex digits) match in any case, whatever their kind. Windows names and paths match in any
    case, GTFOBins (Unix) names exactly. Paths are compared in one canonical form: lower case, backslashes, no
    quotes or repeated separators, each system root as one variable (C:\\Windows\\System32, %SYSTEM32% and
    %windir%\\System32 are one; C:\\Program Files and C:\\Program Files (x86) are both %programfiles%); a
    placeholder the sources write (%VERSION%, <version>) matches any one part. A value holding a separator is
    also looked up by its last part, as a file name. The values travel in the URL: servers and proxies commonly
    refuse a request line over 8 KB, so split a batch of long paths. Search pins the same records first for a
    query that is a hash or one token ending in a file name."""
    query = query_model(LookupQuery, value=value, limit=limit)
    return artefacts.lookup(query, principal)
