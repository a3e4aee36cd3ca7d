"""A search response's result from its row: the page statement's display fields and each leg's score
and rank."""

from __future__ import annotations

from typing import Any

from serving.contract.responses import LegScore, LegScores, Location, SearchResult


def _leg(score: Any, rank: Any) -> LegScore | None:  # noqa: ANN401
    if score is None or rank is None:
        return None
    return LegScore(score=float(score), rank=int(rank))


def search_result(row: dict[str, Any]) -> SearchResult:
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
            label=_leg(row.get("label_score"), row.get("label_rank")),
            neighbours=_leg(row.get("neighbours_score"), row.get("neighbours_rank")),
            procedures=_leg(row.get("procedures_score"), row.get("procedures_rank")),
        ),
        techniques=list(row["techniques"] or ()),
        domains=list(row.get("domains") or ()),
        platforms=list(row["platforms"] or ()),
        snippet=row.get("snippet"),
        text=row.get("text"),
        metadata=row.get("metadata"),
        location=location_of(row),
    )


def location_of(row: dict[str, Any]) -> Location:
    """Where a chunk row (with the chunk's span columns and the document's media type) sits."""
    return Location(
        char_start=row.get("char_start"),
        char_end=row.get("char_end"),
        heading=row.get("heading"),
        pages=row.get("pages"),
        media_type=row.get("media_type"),
    )
