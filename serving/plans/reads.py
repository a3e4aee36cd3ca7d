"""What a plan reads: the serving model's searcher, the catalog's cached facts of sources, the documents and
chunks of schema records, and the request limits; the parts themselves, not the service that composes them.

A plan maps its hits' sources to categories from the catalog's cached facts (`Catalog.source_facts`), not
from a sources listing (a database read and live folder counts) per plan. Document reads are a protocol:
serving/reads/documents.py's `Reads` satisfies it, and plans/ sits beside reads/, not above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from serving.access.keys import Principal
from serving.access.request_limits import RequestLimits
from serving.contract.responses import ChunksResponse, DocumentsResponse
from serving.search.catalog import Catalog
from serving.search.searcher import Searcher


class DocumentReads(Protocol):
    """Documents and chunks by id, each under the caller's access checks."""

    def documents(self, ids: Sequence[str], principal: Principal) -> DocumentsResponse: ...

    def chunks(self, ids: Sequence[str], principal: Principal) -> ChunksResponse: ...


@dataclass(frozen=True)
class PlanReads:
    """The parts a plan uses."""

    searcher: Searcher
    catalog: Catalog
    documents: DocumentReads
    limits: RequestLimits
