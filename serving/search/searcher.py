"""One search against the store: the query's parameters, the legs in one statement (shaped by
serving/search/leg_shapes.py), their fusion, and the page with its display fields."""

from __future__ import annotations

import dataclasses
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
from serving.access.sessions import DEFAULT_EF_SEARCH, ReaderSessions
from serving.contract.errors import InvalidField
from serving.contract.limits import cap
from serving.contract.query_classes import PROSE_SHAPES
from serving.contract.requests import SearchFilters, SearchRequest
from serving.contract.responses import SearchResponse
from serving.search import analysis as logic
from serving.search import fusion, spelling
from serving.search.artefacts import in_holder_order, pinned_holders
from serving.search.catalog import Catalog
from serving.search.connections import Connections
from serving.search.encoder import QueryEncoder
from serving.search.leg_runs import LegRuns, fetch
from serving.search.leg_shapes import LegShaper
from serving.search.parameters import statement_params, voter_params
from serving.search.result_cache import ResultCache, cache_key
from serving.search.result_rows import search_result
from serving.search.search_file import SearchConfig
from serving.search.sentence_model import SentenceModel, SentenceVectors
from serving.search.side_legs import SideLegs
from serving.search.source_vectors import SourceVectors
from serving.search.statements import Statements
from serving.search.technique_names import TechniqueNames

# The label leg's weight in the fusion, beside full text and vectors at 1.0 (serving/search/technique_names.py).
LABEL_WEIGHT = 1.0


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
    sentence: SentenceModel | None = None  # the trained model of the sentence path (serving/search/sentence_model.py)

    @property
    def legs(self) -> LegRuns:
        return LegRuns(self.statements, self.sessions, self.side)

    @property
    def shaper(self) -> LegShaper:
        return LegShaper(self.catalog, self.vectors)

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
        model while one serves."""
        encoder = self.sentence.encoder() if self.sentence is not None else None
        return self.encoder.model_id if encoder is None else f"{self.encoder.model_id}+{encoder.model_id}"

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
        w_fts, w_vec, w_fuzzy = self._weights(req, analysis)
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
            plan = self._label(req, analysis, plan, params, fixes, names, then_vec=then_vec)
            self.shaper.shape_full_text(conn, req, analysis, plan, params, then_vec=then_vec)
            resolved = req.filters.model_copy(update={"sources": params["sources"]})
            walk: dict[str, bool] = {}
            vec_model = self.encoder.model_id
            if plan.vec_k:
                walk = self.shaper.vector_walk(conn, resolved, self.encoder.model_id)
                self.shaper.voter_walks(conn, params, self.encoder.model_id)
                voters = [leg for leg, w in (("neighbours", plan.w_neighbours), ("procedures", plan.w_procedures)) if w]
                walk, sentence_model = self.shaper.held_nearest(
                    conn, params, walk, self.encoder.model_id, voters, fresh=versioned, sentence=sentence
                )
                vec_model = sentence_model or vec_model
            ef_search = max(self.config.ef_search_for(self.catalog.lexeme_stats(conn).chunks), plan.vec_k)
            if plan.vec_k:
                self.sessions.ef_search(conn, ef_search)
            floor = self.config.vector_threshold(vec_model, analysis.query_type) if plan.vec_k else None
            window_rows, below = self._fused(
                conn, req, plan, params, walk, floor, ef_search=ef_search, then_vec=then_vec
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
            page = self._page(conn, req, params, ranked[req.offset : req.offset + req.k])
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

    def _weights(self, req: SearchRequest, analysis: logic.QueryAnalysis) -> tuple[float, float, float]:
        """w_fts, w_vec and w_fuzzy: the request's, or for a hybrid search the query shape's from
        search.yaml (`class_weights`) where the request does not set them."""
        if req.mode != "hybrid":
            return req.w_fts, req.w_vec, req.w_fuzzy
        chosen = self.config.weights(analysis.query_type)

        def pick(name: str, configured: float | None) -> float:
            return float(getattr(req, name)) if name in req.model_fields_set or configured is None else configured

        return pick("w_fts", chosen.fts), pick("w_vec", chosen.vec), pick("w_fuzzy", chosen.fuzzy)

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

    def _label(
        self,
        req: SearchRequest,
        analysis: logic.QueryAnalysis,
        plan: logic.Plan,
        params: dict[str, Any],
        fixes: dict[str, str],
        names: TechniqueNames,
        *,
        then_vec: bool,
    ) -> logic.Plan:
        """The techniques a hybrid query names in full (after spelling correction) for the label leg, and
        the voter legs (techniques of the query's nearest documents, and of its nearest procedure examples)
        for every hybrid text query."""
        params["label_ids"] = []
        params["label_candidates"] = self.config.label_candidates
        voters = {"neighbours": self.config.neighbours, "procedures": self.config.procedures}  # search.yaml
        params |= voter_params(req.filters, voters)
        if req.mode != "hybrid" or then_vec or analysis.query_type not in {"keyword", *PROSE_SHAPES}:
            return plan
        ids = names.find(spelling.apply(req.query, fixes))
        chosen = self.config.weights(analysis.query_type)
        # A query that names a technique is of the technique-name class whatever its shape: it says
        # which technique it means, so its voters keep the default weights.
        neighbours = voters["neighbours"].weight if ids or chosen.neighbours is None else chosen.neighbours
        procedures = voters["procedures"].weight if ids or chosen.procedures is None else chosen.procedures
        running = {"neighbours": neighbours, "procedures": procedures}  # a leg weighted 0 does not run
        plan = dataclasses.replace(
            plan,
            w_neighbours=neighbours if plan.vec_k else 0.0,
            w_procedures=procedures if plan.vec_k else 0.0,
            scored=tuple(
                (leg, w)
                for leg, w in sorted(chosen.scored.items())
                if plan.vec_k and running[leg] and not ids and analysis.report_sentence
            ),
        )
        if not ids:
            return plan
        params["label_ids"] = list(ids)
        return dataclasses.replace(plan, w_label=LABEL_WEIGHT if chosen.label is None else chosen.label)

    def _fused(
        self,
        conn: psycopg.Connection,
        req: SearchRequest,
        plan: logic.Plan,
        params: dict[str, Any],
        walk: dict[str, bool],  # how the vector leg reads (LegShaper.vector_walk)
        floor: float | None,
        *,
        ef_search: int = DEFAULT_EF_SEARCH,
        then_vec: bool = False,
    ) -> tuple[list[dict[str, Any]], int]:
        """Run the needed legs (serving/search/leg_runs.py), drop the vector leg's candidates
        under `floor` (the model's threshold for the query shape), then fuse them (by reciprocal rank, or
        fts_then_vec's re-ranking) and take the window; with the count dropped."""
        if then_vec:
            wanted = {"vec": True, "fts_vec": True, "exact": bool(params["exact_ids"])}
            params = {**params, "child_ids": []}
        else:
            wanted = {
                "vec": plan.vec_k > 0,
                "fts": plan.fts_k > 0 and not params["pool_fts"],
                "fuzzy": plan.fuzzy_k > 0,
                "label": bool(params["label_ids"]),
                "neighbours": plan.w_neighbours > 0,
                "procedures": plan.w_procedures > 0,
                "exact": bool(params["exact_ids"] or params["child_ids"]),
            }
        legs = [leg for leg, needed in wanted.items() if needed]
        rows: dict[str, list[dict[str, Any]]] = {leg: [] for leg in legs}
        for row in self.legs.rows(conn, legs, params, walk=walk, ef_search=ef_search):
            rows[row["leg"]].append(row)
        exact = rows.pop("exact", [])
        for leg_rows in rows.values():  # each leg best first (UNION ALL promises no order)
            leg_rows.sort(key=_best_first)
        # The vector leg's own candidates under the model's threshold lose their vector vote; they keep
        # their other legs (the full text ranked within the vector pool is taken before, and
        # fts_then_vec's full-text candidates are full text's).
        pooled = rows.get("vec", [])
        below = 0
        if floor is not None and "vec" in rows:
            rows["vec"] = [r for r in pooled if r["score"] >= floor]
            below = len(pooled) - len(rows["vec"])
        if then_vec:
            items = fusion.then_vec(rows["fts_vec"], rows["vec"], exact)
        else:
            if params["pool_fts"]:
                rows["fts"] = fusion.pool_fts(pooled, plan.fts_k)
            items = fusion.fuse(rows, exact, plan, req.rrf_k0, logic.rrf_max(plan, req.rrf_k0))
        window = fusion.window(
            items,
            group_by_doc=req.group_by_doc,
            size=plan.window,
            aggregate=self.config.document_score,
            rrf_k0=req.rrf_k0,
        )
        return window, below

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
        display = {
            r["chunk_id"]: r for r in fetch(conn, self.statements.result_rows, display_params, "search:result_rows")
        }
        return [{**r, **display[r["chunk_id"]]} for r in page if r["chunk_id"] in display]


def _best_first(row: dict[str, Any]) -> tuple[float, str]:
    return -row["score"], row["chunk_id"]
