"""The one implementation behind the REST routes and the MCP tools: search, lookups, sources, stats."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from secrag.enrichment import enrich
from secrag.queries import Queries, one_row

from . import fusion
from . import search as logic
from .auth import Principal
from .encoder import QueryEncoder
from .errors import InvalidField, NotFound
from .lexicon import LexemeStats
from .limits import cap
from .metrics import Metrics
from .querylog import QueryLog
from .schemas import (
    Attempt,
    Chunk,
    ChunksResponse,
    Document,
    DocumentsResponse,
    LegScore,
    LegScores,
    SearchRequest,
    SearchResponse,
    SearchResult,
    SourceInfo,
    SourcesResponse,
    UpstreamResponse,
)
from .search_config import SearchConfig
from .sessions import DEFAULT_EF_SEARCH, ReaderSessions
from .settings import ServingSettings
from .statements import Statements
from .stats import collect_stats
from .upstream import Refetcher

log = logging.getLogger(__name__)
T = TypeVar("T")
LOOKUP_TTL = 300.0
SOURCES_TTL = 30.0
# Keyword queries estimated (serving/lexicon.py) to match more chunks rank full text within the vector leg's
# candidates, as natural-language queries always do (a wider pool measured no better: dev nDCG@10 0.608 at
# the vector leg's 60, 0.604 at 100, 0.595 at 300).
FTS_CORPUS_MAX_MATCHES = 1000
# Filters estimated to keep at most this many chunks get exact vector distances instead of the HNSW index.
EXACT_VECTOR_MAX_CHUNKS = 4000
CHUNKS_PER_DOC_BOUND = 8
# Full-text mode ranks prose by its rarest words: at most this many, each in at most this share of chunks.
PROSE_MAX_WORDS = 8
PROSE_MAX_SHARE = 0.02
# Hybrid ranks the full text of longer prose within the vector pool by its rarest distinct words: ts_rank_cd
# of an OR of hundreds of words costs seconds even on a pool (a 900-word query: 2.5 s; see bench/flood.py).
POOL_MAX_WORDS = 64


@dataclass
class _Cached:
    """A value refreshed at most every `ttl` seconds."""

    ttl: float
    value: Any = None
    at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, load: Callable[[], T]) -> T:
        with self.lock:
            if self.value is None or time.monotonic() - self.at > self.ttl:
                self.value = load()
                self.at = time.monotonic()
            return self.value  # type: ignore[no-any-return]


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
    _lookup: _Cached = field(default_factory=lambda: _Cached(LOOKUP_TTL))
    _technique_ids: _Cached = field(default_factory=lambda: _Cached(LOOKUP_TTL))
    _source_names: _Cached = field(default_factory=lambda: _Cached(SOURCES_TTL))
    _public_sources: _Cached = field(default_factory=lambda: _Cached(SOURCES_TTL))
    _lexeme_stats: _Cached = field(default_factory=lambda: _Cached(LOOKUP_TTL))

    # --- caches -------------------------------------------------------------------------------

    def technique_lookup(self) -> dict[str, str]:
        """ATT&CK id -> full name for query-time enrichment (the index-time lookup, cached)."""

        def load() -> dict[str, str]:
            with self.pool.connection() as conn:
                return dict(conn.execute(self.queries.technique_names).fetchall())

        return self._lookup.get(load)

    def technique_ids(self) -> list[str]:
        def load() -> list[str]:
            with self.pool.connection() as conn:
                return [r[0] for r in conn.execute(self.queries.technique_ids).fetchall()]

        return self._technique_ids.get(load)

    def visible_sources(self, conn: psycopg.Connection, principal: Principal) -> list[str]:
        """Source names the caller may know about (user folders only with a visible document)."""
        return [r[0] for r in conn.execute(self.statements.known_sources, principal.params()).fetchall()]

    def public_sources(self, conn: psycopg.Connection) -> frozenset[str]:
        """Names of the sources that are not user folders: anyone may filter by them (cached; read on `conn`)."""
        return self._public_sources.get(
            lambda: frozenset(r[0] for r in conn.execute(self.queries.public_source_names).fetchall())
        )

    # --- search -------------------------------------------------------------------------------

    def source_names(self) -> list[str]:
        """Every source name (exact-identifier ids are `<source>:<id>`; the legs apply the ACL)."""

        def load() -> list[str]:
            with self.pool.connection() as conn:
                return [r[0] for r in conn.execute(self.queries.source_names).fetchall()]

        return self._source_names.get(load)

    def lexeme_stats(self, conn: psycopg.Connection | None = None) -> LexemeStats:
        """Column statistics of chunks (cached), read on `conn` when given: a request never holds two."""

        def read(c: psycopg.Connection) -> LexemeStats:
            with c.cursor(row_factory=dict_row) as cur:
                return LexemeStats.from_row(cur.execute(self.queries.lexeme_frequencies).fetchone())

        def load() -> LexemeStats:
            if conn is not None:
                return read(conn)
            with self.pool.connection() as own:
                return read(own)

        return self._lexeme_stats.get(load)

    def _query_lexemes(self, conn: psycopg.Connection, params: dict[str, Any]) -> tuple[list[str], list[str]]:
        """The full-text and identifier lexemes of the query, as PostgreSQL normalises them."""
        words, idents = one_row(conn.execute(self.queries.query_lexemes, params))
        return words or [], idents or []

    def _pool_fts(
        self, conn: psycopg.Connection, req: SearchRequest, analysis: logic.QueryAnalysis, params: dict[str, Any]
    ) -> bool:
        """Whether hybrid search ranks full text within the vector pool instead of across the corpus."""
        if req.mode != "hybrid":
            return False
        if analysis.query_type == "natural":
            return True  # an OR of many words matches half the corpus; rank prose within the semantic pool
        stats = self.lexeme_stats(conn)
        if not stats.shares:
            return False
        words, idents = self._query_lexemes(conn, params)
        return stats.estimate(words, idents, req.filters.sources) > FTS_CORPUS_MAX_MATCHES

    def _rare_words(self, conn: psycopg.Connection, params: dict[str, Any], limit: int, max_share: float) -> str | None:
        """For prose: an OR of its `limit` rarest lexemes in at most `max_share` of the chunks (None
        without statistics).

        An OR of every word of a paragraph matches half the corpus and ranking that takes seconds;
        ts_rank_cd has no inverse document frequency either, so common words only add noise.
        """
        stats = self.lexeme_stats(conn)
        if not stats.shares:
            return None
        words, _ = self._query_lexemes(conn, params)
        ranked = sorted(set(words), key=lambda w: (stats.share(w), w))
        rare = [w for w in ranked if stats.share(w) <= max_share][:limit] or ranked[:3]
        return " or ".join(rare) if rare else None

    def _exact_vectors(self, conn: psycopg.Connection, filters: Any) -> bool:  # noqa: ANN401 - SearchFilters
        """Whether the filters keep so few chunks that exact distances beat an (iterative) HNSW scan."""
        estimates: list[float] = []
        if filters.doc_ids:
            estimates.append(len(filters.doc_ids) * CHUNKS_PER_DOC_BOUND)
        if filters.sources:
            stats = self.lexeme_stats(conn)
            if stats.source_shares:
                estimates.append(stats.chunks_in(filters.sources))
        return bool(estimates) and min(estimates) <= EXACT_VECTOR_MAX_CHUNKS

    def search(self, req: SearchRequest, principal: Principal) -> SearchResponse:
        started = time.perf_counter()
        analysis = logic.analyse(req.query)
        lookup = self.technique_lookup()
        enriched = enrich(req.query.strip(), lookup)
        filters = req.filters
        techniques = logic.expand_techniques(filters.techniques, self.technique_ids()) if filters.techniques else None
        plan = logic.plan_for(
            req.mode,
            k=req.k,
            offset=req.offset,
            query=req.query,
            fts_k=req.fts_k,
            vec_k=req.vec_k,
            w_fts=req.w_fts,
            w_vec=req.w_vec,
            w_fuzzy=req.w_fuzzy,
            rerank_k=req.rerank_k,
            group_by_doc=req.group_by_doc,
            query_type=analysis.query_type,
        )
        qvec = self.encoder.encode(enriched) if plan.needs_vector else None
        pinned = req.mode != "vector"
        names = self.source_names()
        params: dict[str, Any] = {
            **principal.params(),
            "sources": filters.sources,
            "doc_ids": filters.doc_ids,
            "techniques": techniques,
            "platforms": filters.platforms,
            "tags_any": filters.tags_any,
            "tags_all": filters.tags_all,
            "updated_after": filters.updated_after,
            "updated_before": filters.updated_before,
            "fts_text": analysis.fts_text,
            "ident_text": analysis.ident_text,
            "fuzzy_text": req.query.strip()[:64],
            "has_ident": bool(analysis.ident_text),
            "ident_tier": analysis.is_identifier,
            "qvec": qvec,
            "fts_k": plan.fts_k,
            "vec_k": plan.vec_k,
            "fuzzy_k": plan.fuzzy_k,
            "candidates_k": req.candidates_k,
            "window": plan.window,
            "group_by_doc": req.group_by_doc,
            "exact_ids": logic.exact_doc_ids(analysis.exact_forms, names) if pinned else [],
            "child_ids": logic.exact_doc_ids(logic.child_forms(analysis, self.technique_ids()), names)
            if pinned
            else [],
            "pool_fts": False,
        }
        use_then_vec = req.mode == "hybrid" and req.strategy == "fts_then_vec"
        with self.pool.connection() as conn:
            if filters.sources and not set(filters.sources) <= self.public_sources(conn):
                # as the caller typed them: matched to the visible names case-insensitively, else 422
                params["sources"] = self._check_sources(filters.sources, self.visible_sources(conn, principal))
            if not use_then_vec and plan.fts_k and self._pool_fts(conn, req, analysis, params):
                params["pool_fts"] = True
                if analysis.fts_text.count(" or ") >= POOL_MAX_WORDS:
                    params["fts_text"] = self._rare_words(conn, params, POOL_MAX_WORDS, 1.0) or params["fts_text"]
            elif req.mode == "fts" and analysis.query_type == "natural":
                params["fts_text"] = (
                    self._rare_words(conn, params, PROSE_MAX_WORDS, PROSE_MAX_SHARE) or params["fts_text"]
                )
            exact_vectors = plan.vec_k > 0 and self._exact_vectors(conn, filters)
            if plan.vec_k:
                self.sessions.ef_search(conn, max(DEFAULT_EF_SEARCH, plan.vec_k))
            window_rows = self._fused(conn, req, plan, params, exact_vectors, then_vec=use_then_vec)
            ranked = logic.rescore(
                window_rows,
                mode=req.mode,
                query=req.query,
                analysis=analysis,
                config=self.search_config,
                min_score=req.min_score,
            )
            page = ranked[req.offset : req.offset + req.k]
            if page:  # display fields (and costly snippets) for this page only
                display = {
                    r["chunk_id"]: r
                    for r in self._fetch(
                        conn,
                        self.statements.result_rows,
                        {
                            **params,
                            "ids": [r["chunk_id"] for r in page],
                            "with_metadata": req.return_.metadata,
                            "with_text": req.return_.text,
                            "max_text_chars": req.return_.max_text_chars,
                            "with_snippets": req.return_.snippets,
                        },
                    )
                }
                page = [{**r, **display[r["chunk_id"]]} for r in page if r["chunk_id"] in display]
        results, truncated = cap([_result(r) for r in page], self.settings.max_response_bytes)
        took = (time.perf_counter() - started) * 1000
        return SearchResponse(
            results=results,
            query_type=analysis.query_type,
            enriched_query=enriched,
            took_ms=round(took, 2),
            truncated=truncated,
        )

    @staticmethod
    def _fetch(conn: psycopg.Connection, statement: str | sql.Composed, params: dict[str, Any]) -> list[dict[str, Any]]:
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute(statement, params)
            return cur.fetchall()

    def _fused(
        self,
        conn: psycopg.Connection,
        req: SearchRequest,
        plan: logic.Plan,
        params: dict[str, Any],
        exact_vectors: bool,
        *,
        then_vec: bool = False,
    ) -> list[dict[str, Any]]:
        """Run the needed legs as one statement, then fuse them (by reciprocal rank, or fts_then_vec's
        re-ranking) and take the window."""
        if then_vec:
            wanted = {"vec": True, "fts_vec": True, "exact": bool(params["exact_ids"])}
            params = {**params, "child_ids": []}
        else:
            wanted = {
                "vec": plan.vec_k > 0,
                "fts": plan.fts_k > 0 and not params["pool_fts"],
                "fuzzy": plan.fuzzy_k > 0,
                "exact": bool(params["exact_ids"] or params["child_ids"]),
            }
        statement = self.statements.search(
            [leg for leg, needed in wanted.items() if needed], exact_vectors=exact_vectors
        )
        rows: dict[str, list[dict[str, Any]]] = {leg: [] for leg, needed in wanted.items() if needed}
        for row in self._fetch(conn, statement, params):
            rows[row["leg"]].append(row)
        for leg in ("vec", "fts", "fts_vec", "fuzzy"):  # each leg best first (UNION ALL promises no order)
            if leg in rows:
                rows[leg].sort(key=_best_first)
        exact = rows.pop("exact", [])
        if then_vec:
            items = fusion.then_vec(rows["fts_vec"], rows["vec"], exact)
        else:
            if params["pool_fts"]:
                rows["fts"] = fusion.pool_fts(rows["vec"], plan.fts_k)
            items = fusion.fuse(rows, exact, plan, req.rrf_k0, logic.rrf_max(plan, req.rrf_k0))
        return fusion.window(items, group_by_doc=req.group_by_doc, size=plan.window)

    def _check_sources(self, requested: Sequence[str] | None, known: Sequence[str]) -> list[str] | None:
        """The requested source names as stored (matched case-insensitively); 422 listing the valid ones."""
        if not requested:
            return None
        by_folded = {name.casefold(): name for name in known}
        resolved = []
        for i, name in enumerate(requested):
            match = by_folded.get(name.strip().casefold())
            if match is None:
                raise InvalidField(
                    ["body", "filters", "sources", i],
                    f"unknown source {name[:80]!r}; valid sources: {', '.join(known)}",
                )
            resolved.append(match)
        return resolved

    def log_search(self, req: SearchRequest, resp: SearchResponse) -> None:
        if self.query_log is None:
            return
        top = resp.results[0].score if resp.results else None
        self.query_log.write(
            endpoint="search",
            query_type=resp.query_type,
            query_text=req.query,
            top_score=top,
            result_count=len(resp.results),
            latency_ms=resp.took_ms,
            details={"mode": req.mode, "k": req.k, "strategy": req.strategy},
        )

    # --- lookups ------------------------------------------------------------------------------

    def documents(self, ids: Sequence[str], principal: Principal) -> DocumentsResponse:
        wanted = list(dict.fromkeys(ids))
        ids = [i for i in wanted if "\x00" not in i]  # PostgreSQL text cannot hold NUL: such ids never exist
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = {
                r["doc_id"]: r
                for r in cur.execute(self.statements.documents_by_id, {"ids": ids, **principal.params()}).fetchall()
            }
        found = [
            Document(**{**rows[i], "metadata": rows[i]["metadata"] or {}, "chunk_ids": rows[i]["chunk_ids"] or []})
            for i in wanted
            if i in rows
        ]
        kept, truncated = cap(found, self.settings.max_response_bytes)
        return DocumentsResponse(documents=kept, missing=[i for i in wanted if i not in rows], truncated=truncated)

    def document(self, doc_id: str, principal: Principal) -> Document:
        found = self.documents([doc_id], principal)
        if not found.documents:
            raise NotFound(f"no document {doc_id[:200]!r}")
        return found.documents[0]

    def chunks(self, ids: Sequence[str], principal: Principal) -> ChunksResponse:
        wanted = list(dict.fromkeys(ids))
        ids = [i for i in wanted if "\x00" not in i]
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = {
                r["chunk_id"]: r
                for r in cur.execute(self.statements.chunks_by_id, {"ids": ids, **principal.params()}).fetchall()
            }
        found = [Chunk(**{**rows[i], "identifiers": rows[i]["identifiers"].split()}) for i in wanted if i in rows]
        kept, truncated = cap(found, self.settings.max_response_bytes)
        return ChunksResponse(chunks=kept, missing=[i for i in wanted if i not in rows], truncated=truncated)

    def chunk(self, chunk_id: str, principal: Principal) -> Chunk:
        found = self.chunks([chunk_id], principal)
        if not found.chunks:
            raise NotFound(f"no chunk {chunk_id[:200]!r}")
        return found.chunks[0]

    def upstream(self, doc_id: str, principal: Principal) -> UpstreamResponse:
        """The authoritative upstream record for the document's recorded version (size and time capped)."""
        if "\x00" in doc_id:
            raise NotFound("no such document")
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(self.statements.upstream_record, {"doc_id": doc_id, **principal.params()}).fetchone()
        if row is None:
            raise NotFound(f"no document {doc_id[:200]!r}")
        return UpstreamResponse.model_validate(self.refetcher.refetch(row), from_attributes=True)

    # --- sources and stats --------------------------------------------------------------------

    def sources(self, principal: Principal) -> SourcesResponse:
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            names = self.visible_sources(conn, principal)
            rows = cur.execute(self.queries.sources_list, {"names": names}).fetchall()
        return SourcesResponse(
            sources=[
                SourceInfo(
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
                    last_error=r["last_error"],
                    last_attempt=None
                    if r["attempt_at"] is None
                    else Attempt(
                        at=r["attempt_at"],
                        status=r["attempt_status"],
                        phase=r["attempt_phase"],
                        version=r["attempt_version"],
                        reason=r["attempt_reason"],
                    ),
                    last_success=r["last_success_at"],
                )
                for r in rows
            ]
        )

    def stats(self, principal: Principal) -> dict[str, Any]:
        with self.pool.connection() as conn:
            names = self.visible_sources(conn, principal)
            stats = collect_stats(conn, self.queries, names, self.encoder.model_id, self.metrics.summary())
        return {**stats, "encoder": self.encoder.cache_info()}


def _best_first(row: dict[str, Any]) -> tuple[float, str]:
    return -row["score"], row["chunk_id"]


def _leg(score: Any, rank: Any) -> LegScore | None:  # noqa: ANN401
    if score is None or rank is None:
        return None
    return LegScore(score=float(score), rank=int(rank))


def _result(row: dict[str, Any]) -> SearchResult:
    return SearchResult(
        doc_id=row["doc_id"],
        chunk_id=row["chunk_id"],
        source=row["source"],
        title=row["title"],
        url=row["url"],
        score=round(float(row["score"]), 6),
        exact=bool(row["exact"]),
        scores=LegScores(
            fts=_leg(row["fts_score"], row["fts_rank"]),
            vector=_leg(row["vec_score"], row["vec_rank"]),
            fuzzy=_leg(row["fuzzy_score"], row["fuzzy_rank"]),
        ),
        techniques=list(row["techniques"] or ()),
        platforms=list(row["platforms"] or ()),
        snippet=row.get("snippet"),
        text=row.get("text"),
        metadata=row.get("metadata"),
    )


def readiness(service: Service, expected_version: int) -> dict[str, Any]:
    """Database reachable, schema at the expected migration, query model loaded."""
    checks = {"database": False, "schema": False, "model": service.encoder.loaded}
    version: int | None = None
    try:
        with service.pool.connection(timeout=1.0) as conn:
            row = conn.execute(service.queries.schema_version).fetchone()
            checks["database"] = True
            version = int(row[0]) if row else 0
            checks["schema"] = version == expected_version
    except (psycopg.Error, Exception) as exc:  # noqa: BLE001 - readiness reports, never raises
        log.info("readiness check failed", extra={"error": type(exc).__name__})
    return {
        "status": "ready" if all(checks.values()) else "not ready",
        "checks": checks,
        "schema_version": version,
        "expected_schema_version": expected_version,
        "model": service.encoder.model_id if service.encoder.loaded else None,
    }
