"""What a plan reads from the store, as a protocol: the service's searches, documents, chunks and the cached
facts of sources.

The planner depends on these four reads and the request limits, not on the service that composes them
(serving/service.py satisfies this protocol), so plans/ sits below the service and needs no import of it.
A plan maps its hits' sources to categories from the catalog's cached facts, not from a sources listing
(a database read and live folder counts) per plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from serving.access.keys import Principal
from serving.access.request_limits import RequestLimits
from serving.contract.requests import SearchRequest
from serving.contract.responses import ChunksResponse, DocumentsResponse, SearchResponse
from serving.search.catalog import SourceFacts


class PlanReads(Protocol):
    """The reads a plan makes, each under the caller's access checks."""

    @property
    def limits(self) -> RequestLimits: ...

    def search(self, req: SearchRequest, principal: Principal) -> SearchResponse: ...

    def documents(self, ids: Sequence[str], principal: Principal) -> DocumentsResponse: ...

    def chunks(self, ids: Sequence[str], principal: Principal) -> ChunksResponse: ...

    def source_facts(self) -> Mapping[str, SourceFacts]:
        """Each source's category, kind and served version (the catalog's cache: no read per plan)."""
        ...
