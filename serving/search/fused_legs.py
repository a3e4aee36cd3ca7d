"""The legs one search needs, run and fused: the vector leg's threshold applied, the fusion (reciprocal rank,
or fts_then_vec's re-ranking) and the window; then the page's display fields."""

from __future__ import annotations

from typing import Any

import psycopg

from serving.access.sessions import DEFAULT_EF_SEARCH, ReaderSessions
from serving.contract.requests import SearchRequest
from serving.search import analysis as logic
from serving.search import fusion
from serving.search.leg_runs import LegRuns, Sent, fetch_all
from serving.search.search_file import SearchConfig
from serving.search.statements import Statements


def fused_window(
    legs_run: LegRuns,
    config: SearchConfig,
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
    for row in legs_run.rows(conn, legs, params, walk=walk, ef_search=ef_search):
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
        aggregate=config.document_score,
        rrf_k0=req.rrf_k0,
    )
    return window, below


def page_rows(
    conn: psycopg.Connection,
    statements: Statements,
    sessions: ReaderSessions,
    req: SearchRequest,
    params: dict[str, Any],
    page: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The page's rows with their display fields (snippets are costly, so only for the page), in the search's
    last round trip, which also resets the connection (ReaderSessions.reset_after)."""
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
    # planned once per connection: the plan of the page's ids does not depend on which they are
    shown = Sent(statements.result_rows, display_params, "search:result_rows", generic=True)
    rows = sessions.reset_after(conn, lambda reset: fetch_all(conn, sessions.generic_plan, [shown], then=reset)[0])
    display = {r["chunk_id"]: r for r in rows}
    return [{**r, **display[r["chunk_id"]]} for r in page if r["chunk_id"] in display]


def _best_first(row: dict[str, Any]) -> tuple[float, str]:
    return -row["score"], row["chunk_id"]
