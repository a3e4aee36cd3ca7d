"""SQL statements of the search modes, composed once from the named blocks in sql/queries/serving.sql."""
from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from secrag.queries import Queries


@dataclass(frozen=True)
class SearchStatements:
    """The fused statement (fts, vector, fuzzy and hybrid/fuse) and the fts_then_vec one."""

    fused: sql.Composed
    fts_then_vec: sql.Composed
    fused_natural: sql.Composed  # full text ranked within the vector leg's candidates


def compose(queries: Queries, model_id: str, dimensions: int) -> SearchStatements:
    """Fill `{filters}`, `{query}`, `{final}` and the active model's index expression into the templates.

    The vector expression and the model literal must equal those of the partial HNSW index
    (`(vector::vector(384)) ... WHERE model_id = 'all-MiniLM-L6-v2'`) for the planner to use it.
    """
    parts = {
        "filters": sql.SQL(queries.filters),
        "query": sql.SQL(queries.search_query),
        "final": sql.SQL(queries.search_final),
        "vec": sql.SQL("e.vector::vector({})").format(sql.Literal(int(dimensions))),
        "model": sql.Literal(model_id),
    }
    every = sql.SQL("chunks c JOIN documents d ON d.doc_id = c.doc_id")
    pool = sql.SQL("vec v JOIN chunks c ON c.chunk_id = v.chunk_id JOIN documents d ON d.doc_id = c.doc_id")
    return SearchStatements(fused=sql.SQL(queries.search_fused).format(**parts, fts_from=every),
                            fts_then_vec=sql.SQL(queries.search_fts_then_vec).format(**parts),
                            fused_natural=sql.SQL(queries.search_fused).format(**parts, fts_from=pool))
