"""The layer algebra: one technique set minus, plus (union) or intersected with another, each technique's score
combined as asked and a comment saying which layer it came from (with that layer's score and comment)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from serving.contract.layer_models import Combine, Operation
from serving.layers.comments import LINE_CAP, cut
from serving.layers.technique_set import Number, Technique, TechniqueSet

COMMENT_JOIN = " / "  # between one layer's comments on a technique


@dataclass(frozen=True)
class Combined:
    """A technique of the result: its score (None: unscored), its comment (merged once, at most COMMENT_CAP
    characters: every entry of the technique carries this one string) and the tactics it is under (empty: every
    tactic)."""

    technique: str
    score: Number | None
    comment: str
    tactics: tuple[str, ...]


def compare(left: TechniqueSet, right: TechniqueSet, operation: Operation, scores: Combine) -> list[Combined]:
    """The techniques of `left <operation> right`, by id; minus keeps the left's scores."""
    if operation == "minus":
        ids = [t for t in left.techniques if t not in right.techniques]
    elif operation == "intersect":
        ids = [t for t in left.techniques if t in right.techniques]
    else:
        ids = list(dict.fromkeys([*left.techniques, *right.techniques]))
    combine: Combine = "left" if operation == "minus" else scores
    return [
        _combined(t, left.techniques.get(t), right.techniques.get(t), left, right, combine)
        for t in sorted(ids, key=technique_order)
    ]


def _combined(
    technique: str,
    ours: Technique | None,
    theirs: Technique | None,
    left: TechniqueSet,
    right: TechniqueSet,
    scores: Combine,
) -> Combined:
    lines = [provenance(left.name, ours), provenance(right.name, theirs)]
    present = [t for t in (ours, theirs) if t is not None]
    tactics: tuple[str, ...] = ()
    if all(t.tactics for t in present):
        tactics = tuple(dict.fromkeys(tactic for t in present for tactic in t.tactics))
    return Combined(
        technique,
        combine(scores, ours.score if ours else None, theirs.score if theirs else None),
        "\n".join(lines),
        tactics,
    )


def provenance(name: str, technique: Technique | None) -> str:
    """`in APT28 (score 1): its comment`, or `not in APT28`, cut at LINE_CAP characters (a layer's name and its
    entries' comments are the caller's: each result entry carries this line, so it has a bound of its own)."""
    if technique is None:
        return cut(f"not in {name}", LINE_CAP)
    scored = f" (score {technique.score:g})" if technique.score is not None else ""
    # One line per layer: a comment's own line breaks (a coverage layer's one line per kind) become "; ".
    comments = ["; ".join(line for line in c.splitlines() if line.strip()) for c in technique.comments]
    said = f": {COMMENT_JOIN.join(comments)}" if comments else ""
    return cut(f"in {name}{scored}{said}", LINE_CAP)


def combine(how: Combine, left: Number | None, right: Number | None) -> Number | None:
    """left/right: that side's score, else the other's; max, min, sum: of the scores there are (None if none)."""
    if how == "left":
        return left if left is not None else right
    if how == "right":
        return right if right is not None else left
    present: Sequence[Number] = [s for s in (left, right) if s is not None]
    if not present:
        return None
    if how == "max":
        return max(present)
    if how == "min":
        return min(present)
    return sum(present)


def technique_order(technique: str) -> tuple[str, int]:
    """T1003 before T1003.001 before T1003.002 before T1005."""
    parent, _, sub = technique.partition(".")
    return parent, int(sub) if sub.isdigit() else -1
