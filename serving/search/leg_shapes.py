"""How a search's legs are shaped before its statement runs, from PostgreSQL's column statistics (read
through the catalog): full text ranked across the corpus or within the vector pool, by every word or
by the rarest, and vector distances from the HNSW index or exact over the filtered chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from serving.contract.query_classes import PROSE_SHAPES
from serving.contract.requests import SearchFilters, SearchRequest
from serving.search import analysis as logic
from serving.search.ann_index import AnnIndex
from serving.search.catalog import Catalog
from serving.search.sentence_model import SENTENCE_SOURCES
from serving.search.source_vectors import Nearest, SourceVectors
from serving.search.statements import VOTER_LEGS

# Keyword queries estimated (serving/search/lexicon.py) to match more chunks rank full text within the vector leg's
# candidates, as natural-language queries always do (a wider pool measured no better: dev nDCG@10 0.608 at
# the vector leg's 60, 0.604 at 100, 0.595 at 300).
FTS_CORPUS_MAX_MATCHES = 1000
# Filters estimated to keep at most this many chunks get exact vector distances (over chunk_vectors, migration
# 0009) instead of the HNSW index: about 0.45 us a chunk on the full snapshot, 2.2 ms for sigma's 4,817,
# where an iterative HNSW scan took 9 ms and missed 3 % of the nearest.
EXACT_VECTOR_MAX_CHUNKS = 10000
# A voter leg with named voting sources (the procedure examples) takes exact distances over their vectors up
# to this many chunks (the real corpus's 16,017 procedure examples), where a whole-graph walk keeping a source
# of a few per cent walks thousands (at a million chunks); above it, their own HNSW index if they have one,
# else the whole graph's walk (at 200k copies, exact over 48,000 put p99 at 137 ms).
VOTER_EXACT_MAX_CHUNKS = 20000
# Named sources held in the API's memory (serving/search/source_vectors.py) give a leg its nearest chunks by a
# matrix product up to this many chunks (1.8 ms for 16,000 on one core); a larger source is walked in
# its own HNSW index or the whole graph, which costs less than reading every row.
HELD_MAX_CHUNKS = 20000
CHUNKS_PER_DOC_BOUND = 8
# Full-text mode ranks prose by its rarest words: at most this many, each in at most this share of chunks.
PROSE_MAX_WORDS = 8
PROSE_MAX_SHARE = 0.02
# Hybrid ranks the full text of longer prose within the vector pool by its rarest distinct words: ts_rank_cd
# of an OR of hundreds of words costs seconds even on a pool (a 900-word query: 2.5 s).
POOL_MAX_WORDS = 64


@dataclass(frozen=True)
class LegShaper:
    """Chooses how the full-text and vector legs of one search run."""

    catalog: Catalog
    vectors: SourceVectors | None = None  # online sources' vectors held in the API's memory
    ann: AnnIndex | None = None  # an HNSW index of every online source's vectors in the API's memory

    def shape_full_text(
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
        elif req.mode in ("fts", "fuzzy") and analysis.query_type in PROSE_SHAPES:
            params["fts_text"] = self.rare_words(conn, params, PROSE_MAX_WORDS, PROSE_MAX_SHARE) or params["fts_text"]

    def pool_fts(
        self, conn: psycopg.Connection, req: SearchRequest, analysis: logic.QueryAnalysis, params: dict[str, Any]
    ) -> bool:
        """Whether hybrid search ranks full text within the vector pool instead of across the corpus."""
        if req.mode != "hybrid":
            return False
        if analysis.query_type in PROSE_SHAPES:
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

    def vector_walk(self, conn: psycopg.Connection, filters: SearchFilters, model_id: str) -> dict[str, bool]:
        """How the vector leg reads (Statements.search's flags): exact distances over the filtered chunks
        when the filters keep few, else the one filtered source's own HNSW index when it has one, else
        (both False) the whole store's graph."""
        if self.exact_vectors(conn, filters):
            return {"exact_vectors": True, "source_index": False}
        sources = filters.sources or []
        own = len(sources) == 1 and sources[0] in self.catalog.vector_indexed_sources(conn, model_id)
        return {"exact_vectors": False, "source_index": own}

    def voter_walks(self, conn: psycopg.Connection, params: dict[str, Any], model_id: str) -> None:
        """`<prefix>_own` of each voter leg: whether it reads its named voting sources' own vectors (few enough
        for exact distances, or one source with its own HNSW index) rather than walking the whole graph."""
        for prefix in VOTER_LEGS.values():
            sources = params[f"{prefix}_sources"]
            own = bool(sources) and (
                (len(sources) == 1 and sources[0] in self.catalog.vector_indexed_sources(conn, model_id))
                or self.catalog.lexeme_stats(conn).chunks_in(sources) <= VOTER_EXACT_MAX_CHUNKS
            )
            params[f"{prefix}_own"] = own

    def held_nearest(
        self,
        conn: psycopg.Connection,
        params: dict[str, Any],
        walk: dict[str, bool],
        model_id: str,
        voters: list[str],
        *,
        fresh: bool = False,
        sentence: tuple[str, np.ndarray] | None = None,
        ef: int = 0,
    ) -> tuple[dict[str, bool], str | None]:
        """The nearest chunks taken in the API's memory (serving/search/source_vectors.py) wherever a leg reads
        only named online sources of at most HELD_MAX_CHUNKS, held at their current version: the vector leg
        filtered by source alone (`vec_ids`, `vec_sims`; the returned walk reads them) and the `voters` legs
        whose voting sources are named (`<prefix>_near_docs`, `<prefix>_near_sims`). Exact distances, as
        PostgreSQL takes them over a few sources; elsewhere the walk stays as it was. The sources' versions are
        the catalog's (at most a second old), or read on `conn` now when `fresh` (a response the result cache
        keeps under the data version `conn` read must not come from older vectors).

        `sentence` is the sentence model's (id, query vector) (serving/search/sentence_model.py): a leg whose
        sources it embeds takes its nearest from that model's held vectors instead. Returns the walk and the
        model whose vectors the vector leg read when it is not the general one (its floor is that model's). `ef`:
        the store's hnsw.ef_search, which the in-process walk keeps too (walk_in_memory)."""
        walk = self.walk_in_memory(conn, params, walk, model_id, voters, fresh=fresh, ef=ef)
        if self.vectors is None or not self.vectors.enabled or params["qvec"] is None:
            return walk, None
        public = self.catalog.public_sources(conn)
        versions = self.catalog.source_versions(conn, fresh=fresh)
        vectors = self.vectors

        def nearest(sources: list[str] | None, k: int) -> tuple[Nearest | None, str | None]:
            if not sources or not set(sources) <= public:
                return None, None
            if self.catalog.lexeme_stats(conn).chunks_in(sources) > HELD_MAX_CHUNKS:
                return None, None
            if sentence is not None and set(sources) <= SENTENCE_SOURCES:
                found = vectors.nearest(sentence[0], sources, versions, sentence[1], k, complete=True)
                if found is not None:
                    return found, sentence[0]
                params["sentence_fell_back"] = True  # not held whole yet: the general model's vectors serve
            return vectors.nearest(model_id, sources, versions, params["qvec"], k), None

        vec_model = None
        if params["doc_ids"] is None and not params["doc_filters"]:
            found, vec_model = nearest(params["sources"], params["vec_k"])
            if found is not None:
                params["vec_ids"], params["vec_sims"] = found.chunk_ids, found.sims
                walk = {"exact_vectors": False, "source_index": False, "given_vectors": True}
        for leg in voters:
            prefix = VOTER_LEGS[leg]
            found, _ = nearest(params[f"{prefix}_sources"], params[f"{prefix}_chunks"])
            if found is not None:
                params[f"{prefix}_own"] = True
                params[f"{prefix}_near_docs"], params[f"{prefix}_near_sims"] = found.doc_ids, found.sims
        return walk, vec_model

    def walk_in_memory(
        self,
        conn: psycopg.Connection,
        params: dict[str, Any],
        walk: dict[str, bool],
        model_id: str,
        voters: list[str],
        *,
        fresh: bool = False,
        ef: int = 0,
    ) -> dict[str, bool]:
        """The walk that nothing narrows (no filter, a caller without a tenant) taken in the API's index
        (serving/search/ann_index.py) instead of PostgreSQL's HNSW index: the vector leg's nearest (`vec_ids`,
        `vec_sims`; the returned walk reads them) and, when every source votes, the neighbours leg's from the
        same walk, as the pooled statement shares it (`nb_near_docs`, `nb_near_sims`, the sources that never
        vote left out)."""
        qvec = params["qvec"]
        if self.ann is None or not self.ann.enabled or qvec is None or any(walk.values()):
            return walk
        if params["sources"] is not None or params["doc_ids"] is not None or params["doc_filters"]:
            return walk
        if params["tenant"] is not None:  # a tenant's rows are walked in PostgreSQL
            return walk
        voting = "neighbours" in voters and params["nb_sources"] is None
        k = max(params["vec_k"], params["nb_chunks"] if voting else 0)
        versions = self.catalog.source_versions(conn, fresh=fresh)
        found = self.ann.nearest(model_id, versions, qvec, k, len(qvec), ef=ef)
        if found is None:
            return walk
        params["vec_ids"], params["vec_sims"] = found.chunk_ids[: params["vec_k"]], found.sims[: params["vec_k"]]
        if voting:
            exclude = set(params["nb_exclude"])
            kept = [
                (d, s) for d, s, src in zip(found.doc_ids, found.sims, found.sources, strict=True) if src not in exclude
            ]
            kept = kept[: params["nb_chunks"]]
            params["nb_own"] = True
            params["nb_near_docs"], params["nb_near_sims"] = [d for d, _ in kept], [s for _, s in kept]
        return {"exact_vectors": False, "source_index": False, "given_vectors": True}

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
