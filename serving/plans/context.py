"""Render a selection as cited context text, and measure how good it is."""

from __future__ import annotations

import re
from collections.abc import Sequence

from serving.contract.plan_models import Citation, Passage
from serving.plans.selection import Candidate

CATEGORY_TITLES = {
    "technique": "Techniques",
    "detection": "Detections",
    "test": "Tests",
    "forensic": "Forensic artifacts",
    "lolbin": "Living-off-the-land binaries and drivers",
    "vulnerability": "Vulnerabilities",
    "schema": "Telemetry schemas (events, tables and their fields)",
    "user": "Your documents",
}
_STOP = frozenset(
    """a an and are as at be by can do does for from how i in is it of on or the this to
what when where which who why with my our your me we you vs versus about into""".split()
)


def render(selected: Sequence[Candidate], categories: Sequence[str]) -> tuple[str, list[Citation]]:
    """Text grouped by category in the plan's order, numbered [1]..[n] by document, then the sources; the
    citations as the plan answers them (serving/contract/plan_models.py)."""
    order = {c: i for i, c in enumerate(categories)}
    grouped = sorted(selected, key=lambda c: (order.get(c.category, len(order)), -c.adjusted, c.doc_id))
    numbers: dict[str, int] = {}
    citations: list[Citation] = []
    lines: list[str] = []
    current = None
    for c in grouped:
        if c.category != current:
            current = c.category
            lines.append(f"## {CATEGORY_TITLES.get(c.category, c.category.title())}\n")
        if c.doc_id not in numbers:
            numbers[c.doc_id] = len(numbers) + 1
            citations.append(_citation(numbers[c.doc_id], c, [p for p in selected if p.doc_id == c.doc_id]))
        lines.append(f"[{numbers[c.doc_id]}] {c.title}\n{c.text.strip()}\n")
    if citations:
        lines.append("Sources:")
        lines.extend(
            f"[{x.number}] {x.doc_id}: {x.title}"
            + (f" <{x.url}>" if x.url else "")
            + (f" (version {x.source_version})" if x.source_version else "")
            for x in citations
        )
    return "\n".join(lines).strip() + "\n", citations


def _citation(number: int, first: Candidate, passages: Sequence[Candidate]) -> Citation:
    """A numbered source of the context with its passages in document order (their spans, as stored)."""
    in_order = sorted(passages, key=lambda p: (p.location.char_start or 0, p.chunk_id))
    return Citation(
        number=number,
        doc_id=first.doc_id,
        title=first.title,
        url=first.url or None,
        source=first.source,
        source_version=first.source_version or None,
        media_type=in_order[0].location.media_type,
        passages=[Passage(chunk_id=p.chunk_id, **p.location.model_dump()) for p in in_order],
    )


def query_terms(query: str) -> list[str]:
    """Distinct meaningful terms of the query (ids kept whole)."""
    words = re.findall(r"[a-z0-9][a-z0-9._-]*[a-z0-9]|[a-z0-9]", query.lower())
    return list(dict.fromkeys(w for w in words if w not in _STOP and len(w) > 1))


# Weights of the plan's quality score: coverage, balance, relative score, completeness.
QUALITY_WEIGHTS = (0.3, 0.2, 0.2, 0.3)
REQUIRED_SHARE = 0.15  # a category with at least this share of the quotas is a required part


def metrics(
    query: str, selected: Sequence[Candidate], quotas: dict[str, int], top_score_scale: float
) -> dict[str, float]:
    """coverage: share of query terms found in the selected text; balance: 1 - half the L1 distance
    between the selected category shares and the quota shares; mean_score: mean raw score;
    confidence: mean of coverage, balance and the mean score relative to `top_score_scale`;
    completeness: share of the required parts (categories with at least REQUIRED_SHARE of the quotas)
    with a selected chunk; quality: QUALITY_WEIGHTS over coverage, balance, relative score and
    completeness; correlation: share of the pairs of labelled chunks of different categories that
    share an ATT&CK technique (parents compared), e.g. detections of the techniques described."""
    if not selected:
        return dict.fromkeys(
            ("coverage", "balance", "mean_score", "confidence", "completeness", "quality", "correlation"), 0.0
        )
    cover = coverage(query, selected)
    balanced = balance(selected, quotas)
    mean_score = sum(c.score for c in selected) / len(selected)
    relative = min(1.0, mean_score / top_score_scale) if top_score_scale > 0 else 0.0
    complete = completeness(selected, quotas)
    parts = (cover, balanced, relative, complete)
    return {
        "coverage": round(cover, 4),
        "balance": round(balanced, 4),
        "mean_score": round(mean_score, 6),
        "confidence": round((cover + balanced + relative) / 3, 4),
        "completeness": round(complete, 4),
        "quality": round(sum(w * v for w, v in zip(QUALITY_WEIGHTS, parts, strict=True)), 4),
        "correlation": round(correlation(selected), 4),
    }


def coverage(query: str, selected: Sequence[Candidate]) -> float:
    """Share of the query's terms found in the selected titles and texts."""
    terms = query_terms(query)
    corpus = " ".join(f"{c.title} {c.text}" for c in selected).lower()
    return sum(1 for t in terms if t in corpus) / len(terms) if terms else 0.0


def balance(selected: Sequence[Candidate], quotas: dict[str, int]) -> float:
    """1 - half the L1 distance between the selected category shares and the quota shares."""
    total_quota = sum(quotas.values()) or 1
    n = len(selected) or 1
    categories = set(quotas) | {s.category for s in selected}
    shares = {c: sum(1 for s in selected if s.category == c) / n for c in categories}
    return max(0.0, 1 - sum(abs(shares[c] - quotas.get(c, 0) / total_quota) for c in categories) / 2)


def completeness(selected: Sequence[Candidate], quotas: dict[str, int]) -> float:
    """Share of the required parts (at least REQUIRED_SHARE of the quotas) with a selected chunk."""
    total_quota = sum(quotas.values()) or 1
    required = [c for c, q in quotas.items() if q > 0 and q / total_quota >= REQUIRED_SHARE]
    present = {s.category for s in selected}
    return sum(1 for c in required if c in present) / len(required) if required else 1.0


def correlation(selected: Sequence[Candidate]) -> float:
    """Share of the pairs of labelled chunks of different categories sharing a technique (parents)."""
    labelled = [(c.category, {t.split(".")[0] for t in c.techniques}) for c in selected if c.techniques]
    pairs = agree = 0
    for i, (category, techniques) in enumerate(labelled):
        for other, theirs in labelled[i + 1 :]:
            if other != category:
                pairs += 1
                agree += bool(techniques & theirs)
    return agree / pairs if pairs else 0.0
