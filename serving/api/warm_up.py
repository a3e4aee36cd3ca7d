"""Warm-up at start-up: a few searches run before the API takes its first request, so that the first
callers after a restart do not pay for the encoder's first run, the catalog's caches (technique lookup,
lexeme statistics, source names), PostgreSQL's plans and the pages of the indexes each leg walks.

The bundled PostgreSQL has no pg_prewarm, and the API's read-only login could not prewarm indexes
anyway (PostgreSQL lets only their owner), so the API warms up by searching: one request per leg and
query class, as the anonymous caller (public documents only). A failure is logged and never stops the
start: an empty or unreachable store is reported by /readyz, not here.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from pydantic import ValidationError

from serving.access.keys import ANONYMOUS
from serving.contract.errors import InvalidField
from serving.contract.requests import SearchRequest
from serving.search.sentence_model import SENTENCE_SOURCES

if TYPE_CHECKING:
    from serving.search.searcher import Searcher

log = logging.getLogger(__name__)

# One request per leg and query class: prose (encoder, HNSW, full text within the pool), an identifier
# (exact leg, technique lookup), a keyword query (GIN index), a misspelt tool name (trigram index) and a
# single-source filter (the vector leg's filtered scan).
REQUESTS: tuple[dict[str, object], ...] = (
    {"query": "credential dumping from lsass process memory", "mode": "hybrid"},
    {"query": "T1059.001", "mode": "hybrid"},
    {"query": "powershell encoded command", "mode": "fts"},
    {"query": "mimikats", "mode": "fuzzy"},
    {"query": "scheduled task persistence", "mode": "vector", "filters": {"sources": ["sigma"]}},
)


def warm_up(searcher: Searcher) -> float:
    """Run the warm-up searches (their results go nowhere); the milliseconds they took."""
    started = time.perf_counter()
    _sentence_path(searcher)
    _vector_index(searcher)
    done = 0
    for body in REQUESTS:
        try:
            searcher.search(SearchRequest.model_validate(body), ANONYMOUS, cache=False)
            done += 1
        except (ValidationError, InvalidField):
            continue  # e.g. a store without the filter's source
        except Exception as exc:  # noqa: BLE001 - warming up is best effort; the start goes on
            log.warning("warm-up search failed: %s", type(exc).__name__, exc_info=True)
    took = (time.perf_counter() - started) * 1000
    log.info("warmed up with %d of %d searches in %.0f ms", done, len(REQUESTS), took)
    return took


def _sentence_path(searcher: Searcher) -> None:
    """The sentence model's encoder and its held vectors of the ATT&CK sources, so that the first sentences
    after a start read them (else the general model serves them until the background loads end)."""
    if searcher.sentence is None or searcher.vectors is None or not searcher.vectors.enabled:
        return
    try:
        encoder = searcher.sentence.load_now()
        if encoder is None:
            return
        for source in sorted(SENTENCE_SOURCES):
            searcher.vectors.load(encoder.model_id, source, encoder.dimensions)
    except Exception as exc:  # noqa: BLE001 - warming up is best effort; the start goes on
        log.warning("warm-up of the sentence path failed: %s", type(exc).__name__, exc_info=True)


def _vector_index(searcher: Searcher) -> None:
    """The in-process vector index at the sources' current versions (serving/search/ann_index.py), so that the
    first unfiltered searches after a start walk it (else PostgreSQL walks them until the background build ends)."""
    if searcher.ann is None or not searcher.ann.enabled:
        return
    try:
        with searcher.pool.connection() as conn:
            versions = searcher.catalog.source_versions(conn, fresh=True)
        searcher.ann.build(searcher.encoder.model_id, versions, searcher.encoder.dimensions)
    except Exception as exc:  # noqa: BLE001 - warming up is best effort; the start goes on
        log.warning("warm-up of the vector index failed: %s", type(exc).__name__, exc_info=True)
