"""A coverage answer's page: the asked techniques in technique order, `limit` of them after the cursor; and the
pages of one request joined again."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from serving.contract.coverage_models import CoverageGaps, CoverageResponse, LogSourceCoverage
from serving.coverage.layer import coverage_layer


def technique_order(technique: str) -> tuple[str, int]:
    """T1003 before T1003.001 before T1003.002 before T1005."""
    parent, _, sub = technique.partition(".")
    return parent, int(sub) if sub.isdigit() else -1


@dataclass(frozen=True)
class Page:
    ids: list[str]  # this page's techniques, in technique order
    total: int  # the techniques asked, on every page
    more: bool  # whether techniques come after this page


def page(asked: Iterable[str], cursor: str | None, limit: int) -> Page:
    """The first `limit` of the asked techniques after `cursor` (a technique id, asked or not)."""
    ordered = sorted(set(asked), key=technique_order)
    start = 0 if cursor is None else bisect_right([technique_order(t) for t in ordered], technique_order(cursor))
    return Page(ordered[start : start + limit], len(ordered), start + limit < len(ordered))


def joined(pages: Sequence[CoverageResponse]) -> CoverageResponse:
    """The pages of one request as one answer, for a caller in process that wants every technique (`secrag
    coverage`): their techniques, gaps and log sources, and the layer of them all."""
    first = pages[0]
    techniques = [t for p in pages for t in p.techniques]
    gaps = CoverageGaps.model_validate(
        {name: [x for p in pages for x in getattr(p.gaps, name)] for name in CoverageGaps.model_fields}
    )
    layer = first.layer
    if layer is not None:
        layer = coverage_layer(techniques, asked=first.actor or first.tactic).model_copy(
            update={"name": layer.name, "domain": layer.domain}
        )
    sources: dict[tuple[str, str | None], LogSourceCoverage] = {}
    for p in pages:
        for s in p.log_sources or ():
            held = sources.get((s.name, s.channel))
            sources[(s.name, s.channel)] = (
                s if held is None else held.model_copy(update={"analytics": held.analytics + s.analytics})
            )
    return first.model_copy(
        update={
            "techniques": techniques,
            "gaps": gaps,
            "layer": layer,
            "log_sources": None if first.log_sources is None else sorted(sources.values(), key=lambda s: -s.analytics),
            "truncated": False,
            "next_cursor": None,
            "took_ms": round(sum(p.took_ms for p in pages), 2),
        }
    )
