"""The serving reads that are composed once from the named blocks in sql/queries/serving.sql: the search
legs and every read of documents (all of them share the `visible` access check)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from psycopg import sql

from secrag.db.queries import Queries

# `vec` is either leg_vec (HNSW) or leg_vec_exact (exact distances); `fts_vec` serves strategy fts_then_vec
LEGS = ("vec", "fts", "fts_vec", "fuzzy", "label", "neighbours", "procedures", "exact")
# The voter legs (leg_neighbours filled once per leg) and the prefix of their named parameters:
# `<prefix>_chunks`, `<prefix>_docs`, `<prefix>_sources`, `<prefix>_own`, and `<prefix>_near_docs` and
# `<prefix>_near_sims` when the API took the nearest itself (serving/search/searcher.py sets them).
VOTER_LEGS = {"neighbours": "nb", "procedures": "pr"}
# The vector leg's other reads (Statements.search's flags), the first that is set wins: the API's own nearest,
# exact distances, a source's own HNSW index; none: the whole store's HNSW walk.
VECTOR_WALKS = ("given_vectors", "exact_vectors", "source_index")


@dataclass(frozen=True)
class Statements:
    """The legs' statements, one UNION ALL statement per set of legs, the page's display fields and the
    document reads.

    Statements are rendered to text once: psycopg then only looks their placeholders up in its cache.
    """

    vec: str
    vec_exact: str  # exact distances, for filters that keep few chunks
    vec_source: str  # one source's own HNSW index on chunk_vectors (secrag models index-source)
    vec_given: str  # the nearest chunks the API took over the sources' vectors it holds (source_vectors.py)
    fts: str
    fts_vec: str
    fuzzy: str
    exact: str
    result_rows: str
    documents_by_id: str
    chunks_by_id: str
    map_chunks: str
    upstream_records: str
    known_sources: str
    absent_words: str
    stats_documents: str  # live counts of user folders, of what the caller may see
    stats_chunks: str
    stats_embeddings: str
    stats_embedded_chunks: str
    coverage: str  # POST /v1/coverage: every count of a request in one statement
    coverage_analytics: str  # and ATT&CK's analytics of its techniques
    coverage_holdings: str  # what the store's rule sets and schemas hold (store-wide, cached)
    lookup: str  # GET /v1/lookup and the artefacts a search pins: the records holding a hash, name or path
    _searches: dict[tuple[str, ...], str] = field(default_factory=dict, repr=False)

    def search(
        self,
        legs: Iterable[str],
        *,
        exact_vectors: bool = False,
        pooled: bool = False,
        source_index: bool = False,
        given_vectors: bool = False,
    ) -> str:
        """One statement running the given legs (rows tagged by `leg`): a UNION ALL of parenthesised SELECTs.

        The vector leg walks the HNSW index of every chunk, or takes exact distances over the filtered
        chunks (`exact_vectors`), or walks the one filtered source's own index (`source_index`), or reads the
        nearest chunks the API took itself (`given_vectors`: `vec_ids`, `vec_sims`). `pooled`:
        the vector and neighbours legs share one walk (vector_pool), for a search that nothing narrows (no
        filter, every source votes); ignored unless both legs run."""
        chosen = tuple(leg for leg in LEGS if leg in set(legs))
        if not chosen:
            raise ValueError("a search needs at least one leg")
        flags = {"given_vectors": given_vectors, "exact_vectors": exact_vectors, "source_index": source_index}
        walk = next((name for name in VECTOR_WALKS if flags[name]), None)
        if "vec" in chosen and walk is not None:
            return self._searches[(*chosen, walk)]
        if pooled and {"vec", "neighbours"} <= set(chosen):
            return self._searches[(*chosen, "pooled")]
        return self._searches[chosen]


def _union(parts: Iterable[str]) -> str:
    return "\nUNION ALL\n".join(f"({part})" for part in parts)


def placeholders(queries: Queries, model_id: str, dimensions: int) -> dict[str, sql.Composable]:
    """What a block may name: `{visible}`, `{filters}` (`{document_filters}` and the chunk's), `{tsq}`,
    `{ident_tsq}`, `{vec}` (`{cv_vec}` over chunk_vectors), `{model}` and `{labelled}` (the documents a technique
    labels that a leg ranks).

    The vector expression and the model literal must equal those of the partial HNSW index
    (`(vector::vector(384)) ... WHERE model_id = 'all-MiniLM-L6-v2'`) for the planner to use it.
    """
    visible = sql.SQL(queries.visible)
    document_filters = sql.SQL(queries.document_filters).format(visible=visible)
    return {
        "visible": visible,
        "document_filters": document_filters,
        "filters": sql.SQL(queries.filters).format(document_filters=document_filters),
        "tsq": sql.SQL(queries.tsq),
        "ident_tsq": sql.SQL(queries.ident_tsq),
        "vec": sql.SQL("e.vector::vector({})").format(sql.Literal(int(dimensions))),
        "cv_vec": sql.SQL("cv.vector::vector({})").format(sql.Literal(int(dimensions))),
        "labelled": sql.SQL(queries.labelled),
        "model": sql.Literal(model_id),
    }


def voter_parts(leg: str) -> dict[str, sql.Composable]:
    """The placeholders of leg_neighbours for one voter leg: its name and its own named parameters."""
    prefix = VOTER_LEGS[leg]
    return {
        "leg": sql.Literal(leg),
        "voter_chunks": sql.Placeholder(f"{prefix}_chunks"),
        "voter_docs": sql.Placeholder(f"{prefix}_docs"),
        "voter_sources": sql.Placeholder(f"{prefix}_sources"),
        "voter_exclude": sql.Placeholder(f"{prefix}_exclude"),
        "voter_own": sql.Placeholder(f"{prefix}_own"),
        "voter_near_docs": sql.Placeholder(f"{prefix}_near_docs"),
        "voter_near_sims": sql.Placeholder(f"{prefix}_near_sims"),
    }


def voter_leg(queries: Queries, parts: dict[str, sql.Composable], leg: str, *, pooled: bool = False) -> str:
    """leg_neighbours filled for one voter leg, its nearest chunks from its own HNSW walk or the shared pool."""
    filled = {**parts, **voter_parts(leg)}
    nearest = sql.SQL(queries.voter_nearest_pooled if pooled else queries.voter_nearest).format(**filled)
    return fill_block(queries.leg_neighbours, {**filled, "nearest": nearest})


def fill_block(block: str, parts: dict[str, sql.Composable]) -> str:
    """A block with its placeholders filled, as text."""
    return sql.SQL(block).format(**parts).as_string()


def compose(queries: Queries, model_id: str, dimensions: int) -> Statements:
    """Every statement the API runs that reads documents, composed from its block (`placeholders`)."""
    parts = placeholders(queries, model_id, dimensions)

    def fill(block: str) -> str:
        return fill_block(block, parts)

    legs = {
        "vec": fill(queries.leg_vec),
        "fts": fill(queries.leg_fts),
        "fts_vec": fill(queries.leg_fts_vec),
        "fuzzy": fill(queries.leg_fuzzy),
        "label": fill(queries.leg_label),
        **{leg: voter_leg(queries, parts, leg) for leg in VOTER_LEGS},
        "exact": fill(queries.leg_exact),
    }
    vec_exact = fill_block(queries.leg_vec_exact, {**parts, "nn_order": sql.SQL("distance, cv.chunk_id")})
    vec_source = fill_block(
        queries.leg_vec_exact, {**parts, "nn_order": sql.SQL("{} <=> %(qvec)s::vector").format(parts["cv_vec"])}
    )
    vec_given = fill(queries.leg_vec_given)
    pooled = {"vec": fill(queries.leg_vec_pooled), "neighbours": voter_leg(queries, parts, "neighbours", pooled=True)}
    pool = "WITH " + fill(queries.vector_pool) + "\n"
    walks = {"given_vectors": vec_given, "exact_vectors": vec_exact, "source_index": vec_source}
    searches: dict[tuple[str, ...], str] = {}
    for n in range(1, len(LEGS) + 1):
        for chosen in itertools.combinations(LEGS, n):
            searches[chosen] = _union(legs[leg] for leg in chosen)
            if "vec" in chosen:
                for walk, vec in walks.items():
                    searches[(*chosen, walk)] = _union(vec if leg == "vec" else legs[leg] for leg in chosen)
                if "neighbours" in chosen:
                    searches[(*chosen, "pooled")] = pool + _union(pooled.get(leg, legs[leg]) for leg in chosen)
    return Statements(
        vec=legs["vec"],
        vec_exact=vec_exact,
        vec_source=vec_source,
        vec_given=vec_given,
        fts=legs["fts"],
        fts_vec=legs["fts_vec"],
        fuzzy=legs["fuzzy"],
        exact=legs["exact"],
        result_rows=fill(queries.result_rows),
        documents_by_id=fill(queries.documents_by_id),
        chunks_by_id=fill(queries.chunks_by_id),
        map_chunks=fill(queries.map_chunks),
        upstream_records=fill(queries.upstream_records),
        known_sources=fill(queries.known_sources),
        absent_words=fill(queries.absent_words),
        stats_documents=fill(queries.stats_documents),
        stats_chunks=fill(queries.stats_chunks),
        stats_embeddings=fill(queries.stats_embeddings),
        stats_embedded_chunks=fill(queries.stats_embedded_chunks),
        coverage=fill(queries.coverage),
        coverage_analytics=fill(queries.coverage_analytics),
        coverage_holdings=fill(queries.coverage_holdings),
        lookup=fill(queries.lookup),
        _searches=searches,
    )
