"""Fill a plan's category quotas from ranked candidates: deterministic, budgeted, explained."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from serving.contract.responses import Location
from serving.plans.plans_file import Plan


@dataclass(frozen=True)
class Candidate:
    """One hybrid-search hit offered to the planner."""

    chunk_id: str
    doc_id: str
    source: str
    category: str
    score: float
    title: str
    text: str
    url: str = ""
    source_version: str = ""
    adjusted: float = 0.0
    techniques: tuple[str, ...] = ()  # the document's ATT&CK labels (the plan's correlation score)
    location: Location = field(default_factory=Location)  # where the chunk sits in its document


@dataclass(frozen=True)
class Decision:
    """Why a candidate was taken or skipped."""

    chunk_id: str
    doc_id: str
    category: str
    score: float
    adjusted: float
    taken: bool
    reason: str


@dataclass(frozen=True)
class Selection:
    """The chosen chunks in selection order, the quotas used and a decision per candidate."""

    selected: tuple[Candidate, ...]
    quotas: dict[str, int]
    decisions: tuple[Decision, ...] = field(default=())


def quota_counts(plan: Plan, total: int) -> dict[str, int]:
    """Integer quotas from ratios by largest remainder, raised to the minimums, never above total."""
    ratios = plan.quotas
    raw = {c: ratios[c] * total for c in ratios}
    counts = {c: math.floor(v) for c, v in raw.items()}
    leftover = total - sum(counts.values())
    for c in sorted(raw, key=lambda c: (-(raw[c] - counts[c]), c))[: max(0, leftover)]:
        if raw[c] > 0:
            counts[c] += 1
    for c, minimum in plan.min_per_category.items():
        counts[c] = max(counts.get(c, 0), minimum)
    while sum(counts.values()) > total:
        # trim the largest quota that is above its minimum (ties by name, so it is deterministic)
        trimmable = [c for c in counts if counts[c] > plan.min_per_category.get(c, 0)]
        if not trimmable:  # a total below the minimums: trim minimums of the smallest ratios first
            trimmable = [c for c in counts if counts[c] > 0]
            smallest = sorted(trimmable, key=lambda c: (ratios.get(c, 0), c))[0]
            counts[smallest] -= 1
            continue
        biggest = sorted(trimmable, key=lambda c: (-counts[c], c))[0]
        counts[biggest] -= 1
    return counts


def _ranked(candidates: Sequence[Candidate], plan: Plan) -> list[Candidate]:
    scored = [
        replace(c, adjusted=c.score * plan.category_boosts.get(c.category, 1.0) * plan.source_boosts.get(c.source, 1.0))
        for c in candidates
    ]
    return sorted(scored, key=lambda c: (-c.adjusted, c.doc_id, c.chunk_id))


def select(candidates: Sequence[Candidate], plan: Plan, total: int | None = None) -> Selection:
    """Fill each category's quota by adjusted score, then backfill from the best remaining candidates.

    Honours the score threshold, the per-document limit, the character budget and the total.
    Same candidates and plan give the same selection; ties break on doc_id then chunk_id.
    """
    total = total or plan.total_chunks
    quotas = quota_counts(plan, total)
    ranked = _ranked(candidates, plan)
    taken: dict[str, str] = {}  # chunk_id -> reason
    skipped: dict[str, str] = {}
    per_doc: dict[str, int] = {}
    per_category: dict[str, int] = {}
    chars = 0

    def try_take(c: Candidate, reason: str) -> bool:
        nonlocal chars
        if len(taken) >= total:
            skipped.setdefault(c.chunk_id, f"total of {total} chunks reached")
            return False
        if per_doc.get(c.doc_id, 0) >= plan.max_chunks_per_doc:
            skipped.setdefault(c.chunk_id, f"document already has {plan.max_chunks_per_doc} chunk(s)")
            return False
        if chars + len(c.text) > plan.char_budget:
            skipped.setdefault(c.chunk_id, f"over the character budget of {plan.char_budget}")
            return False
        taken[c.chunk_id] = reason
        skipped.pop(c.chunk_id, None)
        per_doc[c.doc_id] = per_doc.get(c.doc_id, 0) + 1
        per_category[c.category] = per_category.get(c.category, 0) + 1
        chars += len(c.text)
        return True

    eligible = []
    for c in ranked:
        if c.adjusted < plan.score_threshold:
            skipped[c.chunk_id] = f"below the score threshold {plan.score_threshold}"
        else:
            eligible.append(c)
    for category in sorted(quotas, key=lambda k: (-quotas[k], k)):
        for c in eligible:
            if per_category.get(category, 0) >= quotas[category]:
                break
            if c.category == category and c.chunk_id not in taken:
                try_take(c, f"quota {category} ({per_category.get(category, 0) + 1}/{quotas[category]})")
    for c in eligible:
        if c.chunk_id not in taken:
            if len(taken) >= total:
                skipped.setdefault(c.chunk_id, f"total of {total} chunks reached")
                continue
            try_take(c, "backfill: best remaining candidate")
    for c in eligible:
        if c.chunk_id not in taken and c.chunk_id not in skipped:
            skipped[c.chunk_id] = "quota full"
    order = {cid: i for i, cid in enumerate(taken)}
    selected = tuple(sorted((c for c in ranked if c.chunk_id in taken), key=lambda c: order[c.chunk_id]))
    decisions = tuple(
        Decision(
            c.chunk_id,
            c.doc_id,
            c.category,
            c.score,
            c.adjusted,
            c.chunk_id in taken,
            taken.get(c.chunk_id) or skipped.get(c.chunk_id, "not considered"),
        )
        for c in ranked
    )
    return Selection(selected=selected, quotas=quotas, decisions=decisions)
