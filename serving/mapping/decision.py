"""The report-level decision per technique (search.yaml `map.decision`): a logistic model over the technique's
verified evidence across the text (its strongest and second sentence, how many sentences verify it, the
competition of its siblings and of its parent) and its prior in the store (log(1 + its ATT&CK procedure examples,
one per group, software or campaign that uses it), and its family's), its coefficients fitted on whole labelled
reports with cross-validation by report (bench/map_verifier.py), so a technique's score is the probability that an
analyst annotated it in the text and `min_score` a probability cut. A sentence that writes a technique's id is
evidence at probability 1, weighed as the rest: most ids a report writes (in tables of techniques, lists of
references) are not what an analyst maps it to. Without the decision, the noisy-or of serving/mapping/evidence.py
decides."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from serving.mapping.evidence import Evidence

STRONG = 0.5  # a sentence verifying a technique at this probability or more counts as one of its sentences


def features(
    found: Mapping[str, Sequence[float]], sentences: int, examples: Mapping[str, int] | None = None
) -> dict[str, dict[str, float]]:
    """Each technique's evidence across the text as numbers, from its sentences' verified probabilities (one per
    sentence that supports it), and its prior from `examples` (technique -> its procedure examples in the store)."""
    examples = examples or {}
    families: Counter[str] = Counter()
    for t, n in examples.items():
        families[t.split(".", 1)[0]] += n
    best = {t: max(probs) for t, probs in found.items() if probs}
    out: dict[str, dict[str, float]] = {}
    for technique in best:
        probs = sorted(found[technique], reverse=True)
        parent = technique.split(".", 1)[0]
        family = [t for t in best if t != technique and t.split(".", 1)[0] == parent]
        rival = max((best[t] for t in family), default=0.0)
        over = best.get(parent, 0.0) if parent != technique else max((best[t] for t in family), default=0.0)
        out[technique] = {
            "best": probs[0],
            "second": probs[1] if len(probs) > 1 else 0.0,
            "strong": math.log1p(sum(p >= STRONG for p in probs)),
            "mass": math.log1p(sum(probs)),
            "family_gap": probs[0] - rival,
            "parent_gap": probs[0] - over,
            "sub_technique": float("." in technique),
            "length": math.log1p(sentences) / 10.0,
            "prior": math.log1p(examples.get(technique, 0)),
            "family_prior": math.log1p(families.get(parent, 0)),
        }
    return out


def decide(
    found: Sequence[Evidence],
    sentences: int,
    intercept: float,
    weights: Mapping[str, float],
    examples: Mapping[str, int] | None = None,
) -> list[Evidence]:
    """The techniques rescored by the decision, best first (ties by id)."""
    values = features({e.technique: [v.vote for v in e.votes] for e in found}, sentences, examples)
    scored = []
    for e in found:
        x = values[e.technique]
        z = intercept + sum(w * x[name] for name, w in weights.items())
        scored.append(Evidence(e.technique, round(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z)))), 6), e.votes))
    return sorted(scored, key=lambda e: (-e.score, e.technique))
