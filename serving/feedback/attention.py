"""The attention log: flags on query-log rows that need a person's look (`secrag tune report` counts them).

- `zero_results`: nothing found;
- `low_score:<top>`: the top score is under the mode's `attention.low_score` (search.yaml; the 5th
  percentile of the top scores of the labelled dev queries, so about one answerable query in twenty
  is flagged);
- `unknown_attack_ids:<ids>`: ATT&CK ids in the query that the technique lookup does not know;
- `weak_attack_match:<score>`: the query names known ATT&CK ids (so it was enriched with their names),
  yet no result is that technique or labelled with it (its best such score; 0 when there is none)
  or the best one scores under `attention.weak_attack_match`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from secrag.enrichment import technique_mentions


@dataclass(frozen=True)
class Hit:
    """What the flags need of one result."""

    doc_id: str
    score: float
    techniques: Sequence[str]


def flags(
    query: str, hits: Sequence[Hit], *, known: Collection[str], low_score: float | None, weak_match: float | None
) -> list[str]:
    """The attention flags of one answered request (`known`: the technique lookup's ids; a None
    threshold: that flag is not judged, e.g. a later page has no top result)."""
    found: list[str] = []
    if not hits:
        found.append("zero_results")
    elif low_score is not None and hits[0].score < low_score:
        found.append(f"low_score:{hits[0].score:.3f}")
    ids = technique_mentions(query)  # as enrichment reads them: T1003/001 too, not ATLAS's AML.T0051
    unknown = [i for i in ids if i not in known]
    if unknown:
        found.append(f"unknown_attack_ids:{','.join(unknown)}")
    named = {i for i in ids if i in known}
    if named and hits and weak_match is not None:
        matching = [h.score for h in hits if named & {*h.techniques, h.doc_id.rsplit(":", 1)[-1].upper()}]
        best = max(matching, default=0.0)
        if best < weak_match:
            found.append(f"weak_attack_match:{best:.3f}")
    return found


def kind(flag: str) -> str:
    """`low_score:0.412` -> `low_score`."""
    return flag.split(":", 1)[0]


@dataclass(frozen=True)
class FlaggedQuery:
    """What the attention report reads of one flagged query-log row."""

    endpoint: str
    query_type: str | None
    query_text: str | None  # only when the log keeps texts (SECRAG_QUERY_LOG_TEXT)
    flags: Sequence[str]


@dataclass
class AttentionReport:
    """Flags counted by kind, and the content gaps: zero-result queries grouped by their text (or, when
    the log keeps no texts, by their query class), most frequent first."""

    flagged: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    gaps: list[tuple[str, int]] = field(default_factory=list)
    unknown_ids: Counter[str] = field(default_factory=Counter)


def report(rows: Iterable[FlaggedQuery], *, gaps: int = 20) -> AttentionReport:
    result = AttentionReport()
    empty: Counter[str] = Counter()
    for row in rows:
        result.flagged += 1
        for flag in row.flags:
            result.kinds[kind(flag)] += 1
            if kind(flag) == "unknown_attack_ids":
                result.unknown_ids.update(flag.split(":", 1)[1].split(","))
        if "zero_results" in row.flags:
            empty[(row.query_text or "").strip().lower() or f"({row.query_type or 'unclassified'} query)"] += 1
    result.gaps = empty.most_common(gaps)
    return result
