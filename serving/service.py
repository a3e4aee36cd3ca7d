"""The service composed of its parts, once per process (the app's lifespan, `secrag mcp`, `secrag map`): the
catalog (serving/search/catalog.py), the serving model's searcher (serving/search/serving_model.py), document
reads (serving/reads/documents.py), artefact lookups, the change feed, sources and statistics (serving/reads),
coverage (serving/coverage), Navigator layers (serving/layers), the request log (serving/feedback/request_log.py)
and the request limits. Routes and MCP tools take the parts they use (serving/api/deps.py), never the whole."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass, field

from psycopg_pool import ConnectionPool

from secrag.db.queries import Queries
from serving.access.request_limits import RequestLimits
from serving.access.sessions import ReaderSessions
from serving.coverage.counts import CoverageReads
from serving.feedback.querylog import QueryLog
from serving.feedback.request_log import RequestLog
from serving.layers.screen import LayerReads
from serving.mapping.capacity import MapCapacity
from serving.mapping.sentence_check import SentenceCheck
from serving.observability.prometheus import Exposition
from serving.plans.reads import PlanReads
from serving.plans.telemetry import shipped_telemetry
from serving.reads.artefacts import ArtefactLookup
from serving.reads.changes import ChangeFeed
from serving.reads.documents import Reads
from serving.reads.sources import SourceReads
from serving.reads.upstream import Refetcher
from serving.search.ann_index import AnnIndex
from serving.search.catalog import Catalog
from serving.search.encoder import QueryEncoder
from serving.search.result_cache import ResultCache
from serving.search.search_file import SearchConfig
from serving.search.searcher import Searcher
from serving.search.sentence_model import SentenceModel
from serving.search.serving_model import ServingModel
from serving.search.side_legs import SideLegs
from serving.search.source_vectors import SourceVectors, reader
from serving.search.statements import Statements, compose
from serving.settings import ServingSettings


@dataclass
class Service:
    """Everything a request needs, built once; `encoder` and `statements` are the serving model's at start."""

    settings: ServingSettings
    pool: ConnectionPool
    queries: Queries
    search_config: SearchConfig
    metrics: Exposition  # the app's one request recorder (its summary is /v1/stats' `requests`)
    refetcher: Refetcher
    sessions: ReaderSessions
    encoder: InitVar[QueryEncoder]
    statements: InitVar[Statements]
    query_log: QueryLog | None = None
    make_encoder: Callable[[str], QueryEncoder] | None = None  # follows the active model when given
    catalog: Catalog = field(init=False)
    results: ResultCache = field(init=False)
    side_legs: SideLegs = field(init=False)
    source_vectors: SourceVectors = field(init=False)
    ann_index: AnnIndex = field(init=False)
    limits: RequestLimits = field(init=False)
    map_capacity: MapCapacity = field(init=False)
    model: ServingModel = field(init=False)
    sentence: SentenceModel | None = field(init=False)
    reads: Reads = field(init=False)
    change_feed: ChangeFeed = field(init=False)
    artefacts: ArtefactLookup = field(init=False)
    source_reads: SourceReads = field(init=False)
    coverage: CoverageReads = field(init=False)
    layers: LayerReads = field(init=False)
    request_log: RequestLog = field(init=False)

    def __post_init__(self, encoder: QueryEncoder, statements: Statements) -> None:
        settings = self.settings
        self.catalog = Catalog(
            self.pool, self.queries, statements, aggregate_timeout_ms=settings.reader_aggregate_timeout_ms
        )
        self.results = ResultCache(settings.result_cache_size)
        self.side_legs = SideLegs(self.pool, enabled=settings.search_parallel_legs, busy=self.metrics.in_flight)
        self.source_vectors = SourceVectors(
            reader(self.pool, self.queries.source_vectors, settings.reader_aggregate_timeout_ms),
            max_bytes=settings.search_source_vectors_mb * 2**20,
        )
        self.ann_index = AnnIndex(
            reader(self.pool, self.queries.source_vectors, settings.reader_aggregate_timeout_ms),
            max_bytes=settings.search_ann_index_mb * 2**20,
        )
        self.limits = RequestLimits.from_settings(settings)
        self.map_capacity = MapCapacity.from_settings(settings, busy=self.metrics.in_flight)
        self.sentence = (
            SentenceModel(self._read_promoted, self.make_encoder, pinned=settings.sentence_model)
            if self.make_encoder is not None
            else None
        )
        self.model = ServingModel(
            searcher=self._searcher(encoder, statements),
            searcher_for=lambda e: self._searcher(e, compose(self.queries, e.model_id, e.dimensions)),
            read_active=self._read_active,
            make_encoder=None if settings.serving_model else self.make_encoder,
        )
        # The reads' statements do not name the model (only the search legs do): composed once.
        self.reads = Reads(self.pool, statements, self.refetcher, settings.results_bytes, settings.max_live_refetch)
        self.change_feed = ChangeFeed(self.pool, self.queries, self.catalog)
        self.artefacts = ArtefactLookup(self.pool, statements)
        self.source_reads = SourceReads(self.pool, self.queries, statements, self.catalog)
        self.layers = LayerReads(self.catalog, self.limits)
        self.coverage = CoverageReads(
            self.pool,
            statements,
            self.catalog,
            shipped_telemetry().schemas_for,
            self.layers,
            max_answer_bytes=settings.max_answer_bytes,
        )
        self.request_log = RequestLog(self.query_log, self.catalog, self.search_config.attention)

    @property
    def searcher(self) -> Searcher:
        """The serving model's searcher as it is (requests take `model.current()`, which follows activation)."""
        return self.model.searcher

    def plan_reads(self) -> PlanReads:
        """The parts a plan reads, on the current searcher."""
        return PlanReads(self.model.current(), self.catalog, self.reads, self.limits)

    def _searcher(self, encoder: QueryEncoder, statements: Statements) -> Searcher:
        return Searcher(
            pool=self.pool,
            catalog=self.catalog,
            encoder=encoder,
            statements=statements,
            config=self.search_config,
            sessions=self.sessions,
            max_response_bytes=self.settings.results_bytes,
            results=self.results,
            side=self.side_legs,
            vectors=self.source_vectors,
            ann=self.ann_index,
            sentence=self.sentence,
            check=SentenceCheck(self.source_vectors, self.catalog, self.search_config) if self.sentence else None,
        )

    def _read_promoted(self) -> str:
        with self.pool.connection() as conn:
            row = conn.execute(self.queries.promoted_sentence_model).fetchone()
        return str(row[0]) if row else ""

    def _read_active(self) -> str:
        with self.pool.connection() as conn:
            row = conn.execute(self.queries.active_model).fetchone()
        return str(row[0]) if row else ""
