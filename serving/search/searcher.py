"""One search against the store: the query's parameters, the legs in one statement (shaped by
serving/search/leg_shapes.py, weighted by leg_weights.py, run and fused by fused_legs.py), and the page."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg

from secrag.attack_domains import DEFAULT_DOMAIN
from secrag.enrichment import enrich
from serving.access.keys import Principal
from serving.access.sessions import ReaderSessions
from serving.contract.errors import InvalidField
from serving.contract.limits import cap
from serving.contract.query_classes import PROSE_SHAPES
from serving.contract.requests import SearchFilters, SearchRequest
from serving.contract.responses import SearchResponse
from serving.search import analysis as logic
from serving.search import fused_legs, leg_weights, spelling, verified_ranking
from serving.search.ann_index import AnnIndex
from serving.search.artefacts import in_holder_order, pinned_holders
from serving.search.catalog import Catalog
from serving.search.connections import Connections
from serving.search.encoder import QueryEncoder
from serving.search.leg_runs import LegRuns
from serving.search.leg_shapes import LegShaper
from serving.search.parameters import statement_params
from serving.search.result_cache import ResultCache, cache_key
from serving.search.result_rows import search_result
from serving.search.search_file import SearchConfig
from serving.search.sentence_model import SentenceModel, SentenceVectors
from serving.search.side_legs import SideLegs
from serving.search.source_vectors import SourceVectors
from serving.search.statements import Statements
from serving.search.verified_ranking import SentenceCheck


@dataclass(frozen=True)
class Searcher:
    """Runs POST /v1/search (and the plans' retrieval) for one caller at a time."""

    pool: Connections  # the pool (a map's searches: serving/mapping/stoppable.py)
    catalog: Catalog
    encoder: QueryEncoder
    statements: Statements
    config: SearchConfig
    sessions: ReaderSessions
    max_response_bytes: int
    results: ResultCache = field(default_factory=lambda: ResultCache(0))
    side: SideLegs | None = None  # runs the voter legs on a second connection while a core is idle
    vectors: SourceVectors | None = None  # online sources' vectors held in memory (exact nearest in the API)
    ann: AnnIndex | None = None  # the unfiltered walk in the API's memory (serving/search/ann_index.py)
    sentence: SentenceModel | None = None  # the trained model of the sentence path (serving/search/sentence_model.py)
    check: SentenceCheck | None = None  # verifies a report sentence's techniques (serving/search/verified_ranking.py)

    @property
    def legs(self) -> LegRuns:
        return LegRuns(self.statements, self.sessions, self.side)

    @property
    def shaper(self) -> LegShaper:
        return LegShaper(self.catalog, self.vectors, self.ann)

    def query_vectors(self, queries: Sequence[str]) -> list[np.ndarray]:
        """The vectors search() embeds for these queries (each enriched as it is there), in one model run:
        to pass back as search()'s `vector` when many queries are searched at once (serving/mapping)."""
        lookup = self.catalog.technique_lookup()
        return self.encoder.encode_many([enrich(query.strip(), lookup) for query in queries])

    def sentence_vectors(self, queries: Sequence[str]) -> SentenceVectors | None:
        """The sentence model's vectors of these queries (as query_vectors()), None when no sentence model
        serves: to pass back as search()'s `sentence_vector`."""
        if self.sentence is None:
            return None
        lookup = self.catalog.technique_lookup()
        return self.sentence.encode([enrich(query.strip(), lookup) for query in queries])

    def search(
        self,
        req: SearchRequest,
        principal: Principal,
        *,
        cache: bool = True,
        vector: np.ndarray | None = None,
        sentence_vector: tuple[str, np.ndarray] | None = None,
    ) -> SearchResponse:
        """The response from the result cache when the store has not changed since, else a fresh one
        (`cache=False`: always fresh, and not kept). `vector` is the query's from query_vectors(), so the
        query is not encoded again (a `query_embedding` in the request still comes first); `sentence_vector`
        likewise, the sentence model's (id, vector) from sentence_vectors().

        A fresh response is kept under the data version read on its own connection before its legs ran,
        so an entry is never older than its key, even when the reader URL spreads connections over
        replicas at different points of their replay."""
        started = time.perf_counter()
        keyed = cache and self.results.max_size > 0
        models = self._models()
        if keyed:
            key = cache_key(self.catalog.data_version(), models, principal, req)
            cached = self.results.get(key)
            if cached is not None:
                return cached.model_copy(update={"took_ms": round((time.perf_counter() - started) * 1000, 2)})
        with self.side.search() if self.side is not None else nullcontext():
            response, version = self._search(req, principal, started, vector, sentence_vector, versioned=keyed)
        if version is not None:
            self.results.put(cache_key(version, models, principal, req), response)
        return response

    def _models(self) -> str:
        """The models a response depends on, for the result cache's key: the serving model, and the sentence
        model while one serves with its verifier's version."""
        encoder = self.sentence.encoder() if self.sentence is not None else None
        if encoder is None:
            return self.encoder.model_id
        checked = f"@{self.check.version(encoder.model_id)}" if self.check is not None else ""
        return f"{self.encoder.model_id}+{encoder.model_id}{checked}"

    def _search(
        self,
        req: SearchRequest,
        principal: Principal,
        started: float,
        vector: np.ndarray | None = None,
        sentence_vector: tuple[str, np.ndarray] | None = None,
        *,
        versioned: bool = False,
    ) -> tuple[SearchResponse, str | None]:
        """The response, and with `versioned` the data version its connection saw before the legs read."""
        analysis = logic.analyse(req.query)
        enriched = enrich(req.query.strip(), self.catalog.technique_lookup())
        w_fts, w_vec, w_fuzzy = leg_weights.weights(req, analysis, self.config)
        plan = logic.plan_for(
            req.mode,
            k=req.k,
            offset=req.offset,
            query=req.query,
            fts_k=req.fts_k,
            vec_k=req.vec_k,
            w_fts=w_fts,
            w_vec=w_vec,
            w_fuzzy=w_fuzzy,
            rerank_k=req.rerank_k,
            group_by_doc=req.group_by_doc,
            query_type=analysis.query_type,
        )
        own = self._given_vector(req)  # checked in every mode
        given = own if own is not None else vector
        pending = self._sentence_vector(req, analysis, enriched, sentence_vector, own) if plan.vec_k else None
        qvec = (given if given is not None else self.encoder.encode(enriched)) if plan.needs_vector else None
        sentence = pending() if pending is not None else None
        params = statement_params(req, analysis, plan, qvec, principal, self.catalog)
        then_vec = req.mode == "hybrid" and req.strategy == "fts_then_vec"
        # read before the connection is taken: loading the names takes a pooled connection of its own
        names = self.catalog.technique_names(req.filters.domains or (DEFAULT_DOMAIN,))  # the asked domains'
        with self.pool.connection() as conn:
            version = self.catalog.read_data_version(conn) if versioned else None
            params["sources"] = self._sources(conn, principal, req.filters)
            holders = [] if req.mode == "vector" else pinned_holders(conn, self.statements.lookup, req.query, principal)
            params["exact_ids"] = [*params["exact_ids"], *holders]
            fixes = self._corrections(conn, req, analysis, plan, params)
            plan = leg_weights.label(req, analysis, plan, params, fixes, names, self.config, then_vec=then_vec)
            self.shaper.shape_full_text(conn, req, analysis, plan, params, then_vec=then_vec)
            resolved = req.filters.model_copy(update={"sources": params["sources"]})
            walk: dict[str, bool] = {}
            vec_model = self.encoder.model_id
            store_ef = self.config.ef_search_for(self.catalog.lexeme_stats(conn).chunks)
            if plan.vec_k:
                walk = self.shaper.vector_walk(conn, resolved, self.encoder.model_id)
                self.shaper.voter_walks(conn, params, self.encoder.model_id)
                voters = [leg for leg, w in (("neighbours", plan.w_neighbours), ("procedures", plan.w_procedures)) if w]
                walk, sentence_model = self.shaper.held_nearest(
                    conn, params, walk, self.encoder.model_id, voters, fresh=versioned, sentence=sentence, ef=store_ef
                )
                vec_model = sentence_model or vec_model
            ef_search = max(store_ef, plan.vec_k)
            if plan.vec_k:
                self.sessions.ef_search(conn, ef_search)
            floor = self.config.vector_threshold(vec_model, analysis.query_type) if plan.vec_k else None
            window_rows, below = fused_legs.fused_window(
                self.legs, self.config, conn, req, plan, params, walk, floor, ef_search=ef_search, then_vec=then_vec
            )
            window_rows = verified_ranking.rerank(
                window_rows, self.check, conn, sentence, req.query, analysis, self.config
            )
            ranked = logic.rescore(
                window_rows,
                mode=req.mode,
                query=req.query,
                analysis=analysis,
                config=self.config,
                min_score=req.min_score,
            )
            if holders:
                ranked = in_holder_order(ranked, holders)
            page = fused_legs.page_rows(
                conn, self.statements, self.sessions, req, params, ranked[req.offset : req.offset + req.k]
            )
        results, truncated = cap([search_result(r) for r in page], self.max_response_bytes)
        response = SearchResponse(
            results=results,
            query_type=analysis.query_type,
            enriched_query=enriched,
            model=self.encoder.model_id,
            corrections=fixes,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
            truncated=truncated,
            vector_threshold=floor,
            below_vector_threshold=below,
        )
        if params.get("sentence_fell_back"):
            version = None  # not kept: the cache's key names the sentence model, whose vectors were not read
        return response, version

    def _given_vector(self, req: SearchRequest) -> np.ndarray | None:
        """The caller's `query_embedding` as a unit vector, checked against the serving model."""
        given = req.query_embedding
        if given is None:
            return None
        model = self.encoder.model_id
        if given.model != model:
            raise InvalidField(
                ["body", "query_embedding", "model"],
                f"query_embedding must be made with the serving model {model}, not {given.model!r}",
            )
        if len(given.values) != self.encoder.dimensions:
            raise InvalidField(
                ["body", "query_embedding", "values"],
                f"{model} vectors have {self.encoder.dimensions} dimensions, not {len(given.values)}",
            )
        vector = np.asarray(given.values, dtype=np.float32)
        return vector / float(np.linalg.norm(vector))  # not zero: QueryEmbedding checked it

    def _sentence_vector(
        self,
        req: SearchRequest,
        analysis: logic.QueryAnalysis,
        enriched: str,
        given: tuple[str, np.ndarray] | None,
        query_embedding: np.ndarray | None,
    ) -> Callable[[], tuple[str, np.ndarray] | None] | None:
        """How to get the sentence model's (id, vector) of a hybrid report sentence while one serves (`given`:
        encoded already, by the map): its encoding starts now, beside the general model's. None for other
        queries, and for one whose vector the caller gave (`query_embedding` is the serving model's)."""
        if self.sentence is None or req.mode != "hybrid" or not analysis.report_sentence:
            return None
        if given is not None:
            return lambda: given
        return None if query_embedding is not None else self.sentence.encode_one_soon(enriched)

    def _sources(self, conn: psycopg.Connection, principal: Principal, filters: SearchFilters) -> list[str] | None:
        """The source names to search: `sources` as stored, narrowed to the names holding `source_contains`."""
        sources = self.catalog.resolve_sources(conn, principal, filters.sources)
        if filters.source_contains is None:
            return sources
        part = filters.source_contains.strip().casefold()
        matching = [n for n in self.catalog.visible_sources(conn, principal) if part in n.casefold()]
        return [n for n in matching if sources is None or n in sources]

    def _corrections(
        self,
        conn: psycopg.Connection,
        req: SearchRequest,
        analysis: logic.QueryAnalysis,
        plan: logic.Plan,
        params: dict[str, Any],
    ) -> dict[str, str]:
        """Correct misspelt words of a keyword or prose query for its full-text leg (serving/search/spelling.py)."""
        if not plan.fts_k or analysis.query_type not in {"keyword", *PROSE_SHAPES}:
            return {}
        fixes = spelling.corrections(
            conn,
            self.statements.absent_words,
            params,
            req.query,
            self.catalog.vocabulary(),
            public_only=params["tenant"] is None,
        )
        params["fts_text"] = spelling.apply(params["fts_text"], fixes)
        return fixes
