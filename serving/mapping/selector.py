"""Whether a sentence describes a technique, and which: a logistic model over each candidate's evidence
(secrag/mapping/candidates.py), its coefficients learnt on labelled whole reports (bench/map_verifier.py
--selector) and kept in search.yaml (`map.selector`), so its output is a probability: the share of candidates so
scored that an analyst annotated on that sentence. A sentence that describes nothing gives every candidate a low one."""

from __future__ import annotations

import math
from collections.abc import Mapping

from secrag.mapping.candidates import Candidate


def features(candidate: Candidate) -> dict[str, float]:
    """The candidate's evidence as numbers."""
    return {
        "share": candidate.share,
        "share_margin": candidate.share_margin,
        "example_sim": candidate.example_sim,
        "near_sim": candidate.near_sim,
        "doc_sim": candidate.doc_sim,
        "doc_margin": candidate.doc_margin,
        "vote_top": 1.0 / candidate.vote_rank if candidate.vote_rank else 0.0,
        "doc_top": 1.0 / candidate.doc_rank if candidate.doc_rank else 0.0,
        "named": float(candidate.named),
        "name_found": float(candidate.name_found),
        "sub_technique": float("." in candidate.technique),
    }


def probability(candidate: Candidate, intercept: float, weights: Mapping[str, float]) -> float:
    """The chance that the sentence describes this technique; 1 for a technique whose id it writes."""
    if candidate.named:
        return 1.0
    values = features(candidate)
    z = intercept + sum(w * values[name] for name, w in weights.items())
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))
