"""Reciprocal-rank fusion of the search legs' rows, grouping by document and the rerank window."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from serving.search.analysis import Plan

Row = Mapping[str, Any]
_LEG_FIELDS = {
    "fts": ("fts_score", "fts_rank"),
    "vec": ("vec_score", "vec_rank"),
    "fuzzy": ("fuzzy_score", "fuzzy_rank"),
    "label": ("label_score", "label_rank"),
    "neighbours": ("neighbours_score", "neighbours_rank"),
    "procedures": ("procedures_score", "procedures_rank"),
}


def pool_fts(vec_rows: Sequence[Row], limit: int) -> list[dict[str, Any]]:
    """The full-text leg ranked within the vector leg's pool (rows' `pool_fts` score), best first."""
    matched = sorted(
        (r for r in vec_rows if r.get("pool_fts") is not None), key=lambda r: (-float(r["pool_fts"]), r["chunk_id"])
    )
    return [{**r, "score": r["pool_fts"]} for r in matched[:limit]]


def fuse(
    legs: Mapping[str, Sequence[Row]], exact: Sequence[Row], plan: Plan, rrf_k0: int, rrf_max: float
) -> list[dict[str, Any]]:
    """One item per chunk: leg scores and 1-based ranks, exact/child tier, and the mode's score.

    Hybrid scores are sum(w_leg / (rrf_k0 + rank_leg)) / rrf_max, plus for the voter legs in `plan.scored`
    w x vote / the leg's best vote (inside rrf_max too); a single-leg mode keeps the leg's own score (fts rank,
    cosine similarity or trigram similarity).
    """
    weights = {
        "fts": plan.w_fts,
        "vec": plan.w_vec,
        "fuzzy": plan.w_fuzzy,
        "label": plan.w_label,
        "neighbours": plan.w_neighbours,
        "procedures": plan.w_procedures,
    }
    items: dict[str, dict[str, Any]] = {}

    def item(row: Row) -> dict[str, Any]:
        found = items.get(row["chunk_id"])
        if found is None:
            found = items[row["chunk_id"]] = {
                "chunk_id": row["chunk_id"],
                "doc_id": row["doc_id"],
                "source": row["source"],
                "title": row["title"],
                "identifiers": row.get("identifiers") or "",
                "ident_hit": False,
                "exact": False,
                "tier": 0,
                "rrf": 0.0,
                "fts_score": None,
                "fts_rank": None,
                "vec_score": None,
                "vec_rank": None,
                "fuzzy_score": None,
                "fuzzy_rank": None,
                "label_score": None,
                "label_rank": None,
                "neighbours_score": None,
                "neighbours_rank": None,
                "procedures_score": None,
                "procedures_rank": None,
            }
        found["ident_hit"] = found["ident_hit"] or bool(row.get("ident_hit"))
        return found

    for leg, rows in legs.items():
        score_field, rank_field = _LEG_FIELDS[leg]
        for rank, row in enumerate(rows, start=1):
            entry = item(row)
            entry[score_field] = float(row["score"])
            entry[rank_field] = rank
            entry["rrf"] += weights[leg] / (rrf_k0 + rank)
    for leg, weight in plan.scored:
        best = max((float(row["score"]) for row in legs.get(leg, ())), default=0.0)
        if best > 0:
            for row in legs[leg]:
                items[row["chunk_id"]]["rrf"] += weight * float(row["score"]) / best
    for row in exact:
        entry = item(row)
        if row["is_exact"]:
            entry["exact"] = True
        else:
            entry["tier"] = 1
    single = plan.single_leg
    for entry in items.values():
        if single == "fts":
            entry["score"] = entry["fts_score"] or 0.0
        elif single == "vec":
            entry["score"] = entry["vec_score"] if entry["vec_score"] is not None else -1.0
        elif single == "fuzzy":
            entry["score"] = entry["fuzzy_score"] or 0.0
        else:
            entry["score"] = entry["rrf"] / rrf_max
    return list(items.values())


def then_vec(candidates: Sequence[Row], fill: Sequence[Row], exact: Sequence[Row]) -> list[dict[str, Any]]:
    """Strategy fts_then_vec: full-text candidates re-ranked by cosine similarity (tier 1), then the vector
    leg's other chunks (tier 0); the exact identifier's document first. Score = cosine similarity.

    `candidates` are best full-text first with their `vec_score`; `fill` is the vector leg, best first.
    """
    items: dict[str, dict[str, Any]] = {}

    def item(row: Row, tier: int) -> dict[str, Any]:
        found = items[row["chunk_id"]] = {
            "chunk_id": row["chunk_id"],
            "doc_id": row["doc_id"],
            "source": row["source"],
            "title": row["title"],
            "identifiers": row.get("identifiers") or "",
            "ident_hit": bool(row.get("ident_hit")),
            "exact": False,
            "tier": tier,
            "fts_score": None,
            "fts_rank": None,
            "vec_score": None,
            "vec_rank": None,
            "fuzzy_score": None,
            "fuzzy_rank": None,
        }
        return found

    fts_ranks = {row["chunk_id"]: rank for rank, row in enumerate(candidates, start=1)}
    for rank, row in enumerate(sorted(candidates, key=lambda r: (-r["vec_score"], r["chunk_id"])), start=1):
        entry = item(row, 1)
        entry.update(
            score=row["vec_score"],
            vec_score=row["vec_score"],
            vec_rank=rank,
            fts_score=float(row["score"]),
            fts_rank=fts_ranks[row["chunk_id"]],
        )
    for rank, row in enumerate((r for r in fill if r["chunk_id"] not in fts_ranks), start=1):
        item(row, 0).update(score=row["score"], vec_score=row["score"], vec_rank=rank)
    for row in exact:  # the exact document's row replaces any other of its chunk
        if row["is_exact"]:
            item(row, 2).update(score=1.0, exact=True)
    return list(items.values())


def window(
    items: Sequence[dict[str, Any]], *, group_by_doc: bool, size: int, aggregate: str = "max", rrf_k0: int = 60
) -> list[dict[str, Any]]:
    """The best chunk per document (or every chunk), ordered exact, child tier, identifier hit, score.

    Grouped by document, the best chunk stands for it and its score is the document's by `aggregate`:
    `max` (the best chunk's), `top2` (the mean of the two best chunks', a lone chunk counting 0 for the
    second) or `rrf` (reciprocal ranks of all its chunks among all chunks, divided by the first rank's).
    """

    def best_first(r: Mapping[str, Any]) -> tuple[bool, int, float, str]:
        return (not r["exact"], -r["tier"], -r["score"], r["chunk_id"])

    chosen: list[dict[str, Any]]
    if group_by_doc:
        per_doc: dict[str, list[dict[str, Any]]] = {}
        for entry in items:
            per_doc.setdefault(entry["doc_id"], []).append(entry)
        ranks = {}
        if aggregate == "rrf":
            by_score = sorted(items, key=lambda r: (-r["score"], r["chunk_id"]))
            ranks = {r["chunk_id"]: rank for rank, r in enumerate(by_score, start=1)}
        chosen = []
        for chunks in per_doc.values():
            chunks.sort(key=best_first)
            best = chunks[0]
            if aggregate == "top2":
                second = chunks[1]["score"] if len(chunks) > 1 else 0.0
                best = {**best, "score": (best["score"] + second) / 2}
            elif aggregate == "rrf":
                total = sum(1 / (rrf_k0 + ranks[c["chunk_id"]]) for c in chunks)
                best = {**best, "score": total * (rrf_k0 + 1)}
            chosen.append(best)
    else:
        chosen = list(items)
    chosen.sort(key=lambda r: (not r["exact"], -r["tier"], not r["ident_hit"], -r["score"], r["chunk_id"]))
    return chosen[:size]
