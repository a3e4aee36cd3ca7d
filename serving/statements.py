"""SQL statements of the search modes, composed once from the named blocks in sql/queries/serving.sql."""
from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from secrag.queries import Queries


@dataclass(frozen=True)
class SearchStatements:
    """One statement per leg (fused in Python), the fts_then_vec statement and the page's display fields."""

    vec: sql.Composed
    vec_exact: sql.Composed  # exact distances, for filters that keep few chunks
    fts: sql.Composed
    fuzzy: sql.Composed
    exact: sql.Composed
    fts_then_vec: sql.Composed
    result_rows: sql.Composed


def compose(queries: Queries, model_id: str, dimensions: int) -> SearchStatements:
    """Fill `{filters}`, `{tsq}`, `{vec}`, `{model}` (and for fts_then_vec `{query}`, `{final}`) into the blocks.

    The vector expression and the model literal must equal those of the partial HNSW index
    (`(vector::vector(384)) ... WHERE model_id = 'all-MiniLM-L6-v2'`) for the planner to use it.
    """
    parts = {
        "filters": sql.SQL(queries.filters),
        "tsq": sql.SQL(queries.tsq),
        "ident_tsq": sql.SQL(queries.ident_tsq),
        "query": sql.SQL(queries.search_query),
        "final": sql.SQL(queries.search_final),
        "vec": sql.SQL("e.vector::vector({})").format(sql.Literal(int(dimensions))),
        "model": sql.Literal(model_id),
    }

    def fill(block: str) -> sql.Composed:
        return sql.SQL(block).format(**parts)

    return SearchStatements(vec=fill(queries.leg_vec), vec_exact=fill(queries.leg_vec_exact),
                            fts=fill(queries.leg_fts), fuzzy=fill(queries.leg_fuzzy),
                            exact=fill(queries.leg_exact), fts_then_vec=fill(queries.search_fts_then_vec),
                            result_rows=fill(queries.result_rows))
