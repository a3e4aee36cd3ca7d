"""One search against the store: the query's parameters, the shape of its full-text leg, the legs in
one statement, their fusion, and the page with its display fields."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from secrag.enrichment import enrich

from . import fusion
from . import search as logic
from .auth import Principal
from .catalog import Catalog
from .encoder import QueryEncoder
from .limits import cap
from .responses import LegScore, LegScores, SearchResponse, SearchResult
from .result_cache import ResultCache, cache_key
from .schemas import SearchFilters, SearchRequest
from .search_config import SearchConfig
from .sessions import DEFAULT_EF_SEARCH, ReaderSessions
from .statements import Statements

# Keyword queries estimated (serving/lexicon.py) to match more chunks rank full text within the vector leg's
# candidates, as natural-language queries always do (a wider pool measured no better: dev nDCG@10 0.608 at
# the vector leg's 60, 0.604 at 100, 0.595 at 300).
FTS_CORPUS_MAX_MATCHES = 1000
# Filters estimated to keep at most this many chunks get exact vector distances (over chunk_vectors, migration
# 0009) instead of the HNSW index: about 0.45 us a chunk on the full snapshot, 2.2 ms for sigma's 4,817
# (bench/filtered.py), where an iterative HNSW scan took 9 ms and missed 3 % of the nearest.
EXACT_VECTOR_MAX_CHUNKS = 10000
CHUNKS_PER_DOC_BOUND = 8
# Full-text mode ranks prose by its rarest words: at most this many, each in at most this share of chunks.
PROSE_MAX_WORDS = 8
PROSE_MAX_SHARE = 0.02
# Hybrid ranks the full text of longer prose within the vector pool by its rarest distinct words: ts_rank_cd
# of an OR of hundreds of words costs seconds even on a pool (a 900-word query: 2.5 s; see bench/flood.py).
POOL_MAX_WORDS = 64


@dataclass(frozen=True)
class Searcher:
    """Runs POST /v1/search (and the plans' retrieval) for one caller at a time."""

    pool: ConnectionPool
    catalog: Catalog
    encoder: QueryEncoder
    statements: Statements
    config: SearchConfig
    sessions: ReaderSessions
    max_response_bytes: int
    results: ResultCache = field(default_factory=lambda: ResultCache(0))

    def search(self, req: SearchRequest, principal: Principal, *, cache: bool = True) -> SearchResponse:
        """The response from the result cache when the store has not changed since, else a fresh one
        (`cache=False`: always fresh, and not kept)."""
        started = time.perf_counter()
        key = None
        if cache and self.results.max_size:
            key = cache_key(self.catalog.data_version(), self.encoder.model_id, principal, req)
        cached = self.results.get(key) if key else None
        if cached is not None:
            return cached.model_copy(update={"took_ms": round((time.perf_counter() - started) * 1000, 2)})
        response = self._search(req, principal, started)
        if key:
            self.results.put(key, response)
        return response

    def _search(self, req: SearchRequest, principal: Principal, started: float) -> SearchResponse:
        analysis = logic.analyse(req.query)
        enriched = enrich(req.query.strip(), self.catalog.technique_lookup())
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
        params = self._params(req, analysis, plan, qvec, principal)
        then_vec = req.mode == "hybrid" and req.strategy == "fts_then_vec"
        with self.pool.connection() as conn:
            params["sources"] = self.catalog.resolve_sources(conn, principal, req.filters.sources)
            self._shape_full_text(conn, req, analysis, plan, params, then_vec=then_vec)
            exact_vectors = plan.vec_k > 0 and self.exact_vectors(conn, req.filters)
            if plan.vec_k:
                self.sessions.ef_search(conn, max(DEFAULT_EF_SEARCH, plan.vec_k))
            window_rows = self._fused(conn, req, plan, params, exact_vectors, then_vec=then_vec)
            ranked = logic.rescore(
                window_rows,
                mode=req.mode,
                query=req.query,
                analysis=analysis,
                config=self.config,
                min_score=req.min_score,
            )
            page = self._page(conn, req, params, ranked[req.offset : req.offset + req.k])
        results, truncated = cap([_result(r) for r in page], self.max_response_bytes)
        return SearchResponse(
            results=results,
            query_type=analysis.query_type,
            enriched_query=enriched,
            model=self.encoder.model_id,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
            truncated=truncated,
        )

    def _params(
        self,
        req: SearchRequest,
        analysis: logic.QueryAnalysis,
        plan: logic.Plan,
        qvec: Any,  # noqa: ANN401 - the encoder's vector
        principal: Principal,
    ) -> dict[str, Any]:
        """The named parameters of the search statement (sources are resolved on the connection)."""
        filters = req.filters
        ids = self.catalog.technique_ids()
        pinned = req.mode != "vector"  # exact identifiers are put first except in vector-only search
        names = self.catalog.source_names()
        return {
            **principal.params(),
            "sources": filters.sources,
            "doc_ids": filters.doc_ids,
            "techniques": logic.expand_techniques(filters.techniques, ids) if filters.techniques else None,
            "platforms": filters.platforms,
            "tags_any": filters.tags_any,
            "tags_all": filters.tags_all,
            "updated_after": filters.updated_after,
            "updated_before": filters.updated_before,
            "doc_filters": _document_filters(filters),
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
            "child_ids": logic.exact_doc_ids(logic.child_forms(analysis, ids), names) if pinned else [],
            "pool_fts": False,
        }

    def _shape_full_text(
        self,
        conn: psycopg.Connection,
        req: SearchRequest,
        analysis: logic.QueryAnalysis,
        plan: logic.Plan,
        params: dict[str, Any],
        *,
        then_vec: bool,
    ) -> None:
        """Rank full text within the vector pool (prose, common words) or by the query's rarest words."""
        if not then_vec and plan.fts_k and self.pool_fts(conn, req, analysis, params):
            params["pool_fts"] = True
            if analysis.fts_text.count(" or ") >= POOL_MAX_WORDS:
                params["fts_text"] = self.rare_words(conn, params, POOL_MAX_WORDS, 1.0) or params["fts_text"]
        elif req.mode == "fts" and analysis.query_type == "natural":
            params["fts_text"] = self.rare_words(conn, params, PROSE_MAX_WORDS, PROSE_MAX_SHARE) or params["fts_text"]

    def pool_fts(
        self, conn: psycopg.Connection, req: SearchRequest, analysis: logic.QueryAnalysis, params: dict[str, Any]
    ) -> bool:
        """Whether hybrid search ranks full text within the vector pool instead of across the corpus."""
        if req.mode != "hybrid":
            return False
        if analysis.query_type == "natural":
            return True  # an OR of many words matches half the corpus; rank prose within the semantic pool
        stats = self.catalog.lexeme_stats(conn)
        if not stats.shares:
            return False
        words, idents = self.catalog.query_lexemes(conn, params)
        return stats.estimate(words, idents, req.filters.sources) > FTS_CORPUS_MAX_MATCHES

    def rare_words(self, conn: psycopg.Connection, params: dict[str, Any], limit: int, max_share: float) -> str | None:
        """For prose: an OR of its `limit` rarest lexemes found in at most `max_share` of the chunks
        (None without statistics).

        An OR of every word of a paragraph matches half the corpus and ranking that takes seconds;
        ts_rank_cd has no inverse document frequency either, so common words only add noise.
        """
        stats = self.catalog.lexeme_stats(conn)
        if not stats.shares:
            return None
        words, _ = self.catalog.query_lexemes(conn, params)
        ranked = sorted(set(words), key=lambda w: (stats.share(w), w))
        rare = [w for w in ranked if stats.share(w) <= max_share][:limit] or ranked[:3]
        return " or ".join(rare) if rare else None

    def exact_vectors(self, conn: psycopg.Connection, filters: SearchFilters) -> bool:
        """Whether the filters keep so few chunks that exact distances beat an (iterative) HNSW scan."""
        estimates: list[float] = []
        if filters.doc_ids:
            estimates.append(len(filters.doc_ids) * CHUNKS_PER_DOC_BOUND)
        if filters.sources:
            stats = self.catalog.lexeme_stats(conn)
            if stats.source_shares:
                estimates.append(stats.chunks_in(filters.sources))
        return bool(estimates) and min(estimates) <= EXACT_VECTOR_MAX_CHUNKS

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
        for row in _fetch(conn, statement, params):
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

    def _page(
        self, conn: psycopg.Connection, req: SearchRequest, params: dict[str, Any], page: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The page's rows with their display fields (snippets are costly, so only for the page)."""
        if not page:
            return page
        display_params = {
            **params,
            "ids": [r["chunk_id"] for r in page],
            "with_metadata": req.return_.metadata,
            "with_text": req.return_.text,
            "max_text_chars": req.return_.max_text_chars,
            "with_snippets": req.return_.snippets,
        }
        display = {r["chunk_id"]: r for r in _fetch(conn, self.statements.result_rows, display_params)}
        return [{**r, **display[r["chunk_id"]]} for r in page if r["chunk_id"] in display]


def _document_filters(filters: SearchFilters) -> bool:
    """Whether a filter reads the document (techniques, platforms, tags, dates), not only its chunks."""
    return any(
        value is not None
        for value in (
            filters.techniques,
            filters.platforms,
            filters.tags_any,
            filters.tags_all,
            filters.updated_after,
            filters.updated_before,
        )
    )


def _fetch(conn: psycopg.Connection, statement: str | sql.Composed, params: dict[str, Any]) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(statement, params)
        return cur.fetchall()


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
