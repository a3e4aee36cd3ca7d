"""The one implementation behind the REST routes and the MCP tools, composed of its parts: the catalog
(serving/search/catalog.py), search (serving/search/searcher.py, serving/search/leg_shapes.py), mapping a text
(serving/mapping/mapper.py), coverage (serving/coverage/counts.py), document reads
(serving/reads/documents.py), and here the sources and statistics (readiness: serving/api/readiness.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from secrag import error_kinds
from secrag.freshness import SourceClock, verdict
from secrag.queries import Queries
from serving.access.keys import Principal
from serving.access.request_limits import RequestLimits
from serving.access.sessions import ReaderSessions
from serving.contract.changes import ChangesQuery, ChangesResponse
from serving.contract.coverage_models import CoverageRequest, CoverageResponse
from serving.contract.errors import TooManyRequests
from serving.contract.map_models import MapRequest, MapResponse
from serving.contract.plan_models import PlanRequest, PlanResponse
from serving.contract.requests import SearchRequest, UpstreamRequest
from serving.contract.responses import (
    Attempt,
    Chunk,
    ChunksResponse,
    Document,
    DocumentsResponse,
    SearchResponse,
    SourceInfo,
    SourcesResponse,
    UpstreamBatchResponse,
    UpstreamError,
    UpstreamResponse,
)
from serving.coverage.counts import coverage
from serving.feedback.attention import Hit
from serving.feedback.attention import flags as attention_flags
from serving.feedback.querylog import QueryLog
from serving.feedback.tuned_plans import read_thresholds
from serving.mapping.mapper import map_text
from serving.observability.metrics import Metrics
from serving.plans.telemetry import shipped_telemetry
from serving.reads.changes import ChangeFeed
from serving.reads.documents import Reads
from serving.reads.stats import LiveCounts, collect_stats
from serving.reads.upstream import Refetcher
from serving.search.catalog import SOURCES_TTL, Cached, Catalog, SourceFacts
from serving.search.encoder import QueryEncoder
from serving.search.result_cache import ResultCache
from serving.search.search_file import SearchConfig
from serving.search.searcher import Searcher
from serving.search.statements import Statements, compose
from serving.settings import ServingSettings

log = logging.getLogger(__name__)


@dataclass
class Service:
    """Everything a request needs, built once in the app's lifespan."""

    settings: ServingSettings
    pool: ConnectionPool
    encoder: QueryEncoder
    queries: Queries
    statements: Statements
    search_config: SearchConfig
    metrics: Metrics
    refetcher: Refetcher
    sessions: ReaderSessions
    query_log: QueryLog | None = None
    make_encoder: Callable[[str], QueryEncoder] | None = None  # follows the active model when given
    catalog: Catalog = field(init=False)
    searcher: Searcher = field(init=False)
    reads: Reads = field(init=False)
    change_feed: ChangeFeed = field(init=False)
    _active: Cached = field(init=False, default_factory=lambda: Cached(SOURCES_TTL))
    _switching: threading.Lock = field(init=False, default_factory=threading.Lock)
    results: ResultCache = field(init=False)
    limits: RequestLimits = field(init=False)

    def __post_init__(self) -> None:
        self.catalog = Catalog(
            self.pool, self.queries, self.statements, aggregate_timeout_ms=self.settings.reader_aggregate_timeout_ms
        )
        self.results = ResultCache(self.settings.result_cache_size)
        self.limits = RequestLimits.from_settings(self.settings)
        self.searcher = self._searcher(self.encoder, self.statements)
        self.reads = Reads(self.pool, self.statements, self.refetcher, self.settings.max_response_bytes)
        self.change_feed = ChangeFeed(self.pool, self.queries, self.catalog)

    def _searcher(self, encoder: QueryEncoder, statements: Statements) -> Searcher:
        return Searcher(
            pool=self.pool,
            catalog=self.catalog,
            encoder=encoder,
            statements=statements,
            config=self.search_config,
            sessions=self.sessions,
            max_response_bytes=self.settings.max_response_bytes,
            results=self.results,
        )

    # --- the serving model --------------------------------------------------------------------

    def follow_active_model(self) -> None:
        """Switch to the model the pipeline activated (checked every SOURCES_TTL seconds) unless a serving
        model is configured. The pipeline activates a model only once every chunk has its vector, so
        searches move from complete to complete; until the new encoder is loaded the old one serves."""
        if self.make_encoder is None or self.settings.serving_model:
            return
        try:
            active = self._active.get(self._read_active)
        except (psycopg.Error, OSError) as exc:
            log.info("cannot read the active model", extra={"error": type(exc).__name__})
            return
        if not active or active == self.encoder.model_id or not self._switching.acquire(blocking=False):
            return
        try:
            encoder = self.make_encoder(active)
            statements = compose(self.queries, encoder.model_id, encoder.dimensions)
            log.info("serving model %s (was %s)", encoder.model_id, self.encoder.model_id)
            self.searcher = self._searcher(encoder, statements)  # one assignment: a request sees old or new
            self.encoder, self.statements = encoder, statements
        except Exception:  # noqa: BLE001 - the old model keeps serving; logged with its traceback
            log.exception("cannot load the active model %s; still serving %s", active, self.encoder.model_id)
        finally:
            self._switching.release()

    def tuned_thresholds(self) -> dict[str, float]:
        """The plans' score thresholds approved by `secrag tune apply`, by query type
        (serving/feedback/tuned_plans.py)."""
        with self.pool.connection() as conn:
            return read_thresholds(conn, self.queries.tuned_values)

    def _read_active(self) -> str:
        with self.pool.connection() as conn:
            row = conn.execute(self.queries.active_model).fetchone()
        return str(row[0]) if row else ""

    # --- search -------------------------------------------------------------------------------

    def search(self, req: SearchRequest, principal: Principal) -> SearchResponse:
        """A search (the plans' too: the request limits are checked at the edges, REST and MCP)."""
        self.follow_active_model()
        return self.searcher.search(req, principal)

    def map_text(self, req: MapRequest, principal: Principal) -> MapResponse:
        """A text's ATT&CK techniques (serving/mapping): one search per sentence, all on one searcher (one
        model), at most SECRAG_MAP_CONCURRENCY of them (and the pool's size) at once."""
        self.follow_active_model()
        concurrency = min(self.settings.map_concurrency, self.settings.pool_max_size)
        return map_text(self.searcher, self.limits, concurrency, req, principal)

    def coverage(self, req: CoverageRequest, principal: Principal) -> CoverageResponse:
        """What the store holds for ATT&CK techniques, by kind (serving/coverage): one statement per request."""
        return coverage(self.pool, self.statements, self.catalog, shipped_telemetry().schemas_for, req, principal)

    def attention(self, query: str, hits: Sequence[Hit], score_scale: str | None, *, attack: bool = True) -> list[str]:
        """The attention flags of an answered request (serving/feedback/attention.py): `score_scale` is the mode
        whose low_score applies (None: not judged), `attack` whether the hits carry technique labels."""
        config = self.search_config.attention
        return attention_flags(
            query,
            hits,
            known=self.catalog.technique_lookup().keys(),
            low_score=config.low_score.of(score_scale) if score_scale else None,
            weak_match=config.weak_attack_match if attack else None,
        )

    def log_search(self, req: SearchRequest, resp: SearchResponse, endpoint: str = "search") -> None:
        # fts_then_vec scores are cosines (the vector scale); a later page has no top result to judge.
        scale = "vector" if req.mode == "hybrid" and req.strategy == "fts_then_vec" else req.mode
        self._log(
            endpoint,
            req.query,
            resp.query_type,
            [Hit(r.doc_id, r.score, r.techniques) for r in resp.results],
            resp.took_ms,
            {"mode": req.mode, "k": req.k, "strategy": req.strategy},
            score_scale=None if req.offset else scale,
        )

    def log_plan(self, req: PlanRequest, resp: PlanResponse, endpoint: str = "plan") -> None:
        """A plan's selected chunks carry no technique labels, so weak_attack_match is not judged."""
        hits = sorted((Hit(c.doc_id, c.score, ()) for c in resp.selected), key=lambda h: -h.score)
        details = {"plan": resp.plan_name, "candidates": resp.candidates}
        self._log(endpoint, req.query, resp.query_type, hits, resp.took_ms, details, score_scale="hybrid", attack=False)

    def _log(
        self,
        endpoint: str,
        query: str,
        query_type: str,
        hits: Sequence[Hit],
        latency_ms: float,
        details: dict[str, Any],
        *,
        score_scale: str | None,
        attack: bool = True,
    ) -> None:
        """One query-log row with its attention flags; never raises (logging must not fail a request,
        and MCP logs inside it)."""
        if self.query_log is None:
            return
        try:
            self.query_log.write(
                endpoint=endpoint,
                query_type=query_type,
                query_text=query,
                top_score=hits[0].score if hits else None,
                result_count=len(hits),
                latency_ms=latency_ms,
                details=details,
                attention=self.attention(query, hits, score_scale, attack=attack),
            )
        except Exception:  # noqa: BLE001
            log.warning("query log row not written", exc_info=True)

    # --- lookups ------------------------------------------------------------------------------

    def documents(self, ids: Sequence[str], principal: Principal) -> DocumentsResponse:
        return self.reads.documents(ids, principal)

    def document(self, doc_id: str, principal: Principal) -> Document:
        return self.reads.document(doc_id, principal)

    def chunks(self, ids: Sequence[str], principal: Principal) -> ChunksResponse:
        return self.reads.chunks(ids, principal)

    def chunk(self, chunk_id: str, principal: Principal) -> Chunk:
        return self.reads.chunk(chunk_id, principal)

    def upstream(
        self, doc_id: str, principal: Principal, *, live: bool = False, columns: Sequence[str] | None = None
    ) -> UpstreamResponse:
        return self.reads.upstream(doc_id, principal, live=live, columns=columns)

    def upstreams(self, req: UpstreamRequest, principal: Principal) -> UpstreamBatchResponse:
        """Several documents' upstream forms. A live batch reads the first SECRAG_MAX_LIVE_REFETCH ids (each
        live read may take the upstream timeout); each id beyond is an error of its own (429), so a request
        the schema admits is always answered."""
        ids = list(dict.fromkeys(req.doc_ids))
        cap = self.settings.max_live_refetch if req.live else len(ids)
        found = self.reads.upstreams(ids[:cap], principal, live=req.live, columns=req.columns)
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

    def changes(self, query: ChangesQuery, principal: Principal) -> ChangesResponse:
        return self.change_feed.page(query, principal)

    # --- sources and stats --------------------------------------------------------------------

    def source_facts(self) -> dict[str, SourceFacts]:
        """Each source's category, kind and served version, cached (what a plan needs of its sources)."""
        return self.catalog.source_facts()

    def sources(self, principal: Principal) -> SourcesResponse:
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            names = self.catalog.visible_sources(conn, principal)
            rows = cur.execute(self.queries.sources_list, {"names": names}).fetchall()
            public = self.catalog.public_sources(conn)
            folders = [n for n in names if n not in public]
            visible: dict[str, int] = {}
            if folders:  # a user folder's records are those the caller may see
                params = {**principal.params(), "names": folders}
                visible = {r["source"]: r["count"] for r in cur.execute(self.statements.stats_documents, params)}
        now = datetime.now(UTC)
        return SourcesResponse(
            sources=[
                _source_info({**r, "record_count": visible.get(r["name"], 0)} if r["name"] in folders else r, now)
                for r in rows
            ]
        )

    def stats(self, principal: Principal) -> dict[str, Any]:
        with self.pool.connection() as conn:
            names = self.catalog.visible_sources(conn, principal)
            public = self.catalog.public_sources(conn)
            live = LiveCounts(self.statements, principal.params())
            stats = collect_stats(
                conn, self.queries, names, self.encoder.model_id, self.metrics.summary(), public, live
            )
        return {
            **stats,
            "serving_model": self.encoder.model_id,
            "encoder": self.encoder.cache_info(),
            "result_cache": self.results.info(),
        }


def _source_info(r: dict[str, Any], now: datetime) -> SourceInfo:
    clock = SourceClock(
        r["poll_interval"], r["current_version"], r["last_seen_version"], r["last_check_at"], r["seen_since"]
    )
    judged = verdict(clock, now)
    return SourceInfo(
        name=r["name"],
        kind=r["kind"],
        description=r["description"],
        category=r["category"],
        upstream=r["upstream"],
        branch=r["branch"],
        tracking=r["tracking"],
        version=r["current_version"],
        last_seen_version=r["last_seen_version"],
        last_check=r["last_check_at"],
        last_sync=r["last_sync_at"],
        records=r["record_count"],
        state=r["state"],
        error_kind=r["error_kind"],
        last_error=error_kinds.message(r["error_kind"]),
        last_attempt=None
        if r["attempt_at"] is None
        else Attempt(
            at=r["attempt_at"],
            status=r["attempt_status"],
            phase=r["attempt_phase"],
            version=r["attempt_version"],
            error_kind=r["error_kind"],
            reason=error_kinds.message(r["error_kind"]),
        ),
        running_since=r["running_since"],
        last_success=r["last_success_at"],
        poll_interval=r["poll_interval"],
        fresh=judged.fresh if judged else None,
        stale_reason=judged.reason if judged else None,
    )
