"""How well an encoder maps held-back procedure examples to their techniques, as the sentence path does: the
example's nearest training examples vote for their techniques (each by its cosine similarity), beside the
example's nearest technique documents. nDCG@10 (the technique grade 2, its parent 1), P@1 and recall@10, the
figures the quality gate compares."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.training.examples import LabelledData

Encode = Callable[[list[str]], np.ndarray]  # texts -> unit rows
K = 10
VOTERS = 20  # the nearest training examples that vote (search.yaml's procedures.chunks)


@dataclass(frozen=True)
class Figures:
    """One ranking's figures over the validation examples."""

    ndcg10: float
    p1: float
    recall10: float

    def as_dict(self, prefix: str) -> dict[str, float]:
        return {f"{prefix}_ndcg10": self.ndcg10, f"{prefix}_p1": self.p1, f"{prefix}_recall10": self.recall10}


def grades(technique: str) -> dict[str, int]:
    parent = technique.split(".", 1)[0]
    return {technique: 2, parent: 1} if parent != technique else {technique: 2}


def figures(rankings: Sequence[Sequence[str]], labels: Sequence[str]) -> Figures:
    """nDCG@10, P@1 and recall@10 of technique rankings against each example's technique."""
    ndcg = p1 = rec = 0.0
    for ranked, label in zip(rankings, labels, strict=True):
        g = grades(label)
        dcg = sum((2 ** g.get(t, 0) - 1) / math.log2(i + 2) for i, t in enumerate(ranked[:K]))
        ideal = sum((2**v - 1) / math.log2(i + 2) for i, v in enumerate(sorted(g.values(), reverse=True)))
        ndcg += dcg / ideal
        p1 += 1.0 if ranked and g.get(ranked[0], 0) > 0 else 0.0
        rec += 1.0 if label in ranked[:K] else 0.0
    n = max(1, len(labels))
    return Figures(round(ndcg / n, 4), round(p1 / n, 4), round(rec / n, 4))


def vote_scores(sims: np.ndarray, labels: Sequence[str], voters: int) -> list[dict[str, float]]:
    """Per query row, each technique's vote: the sum of the similarities of its examples among the `voters`
    nearest."""
    top = np.argsort(-sims, axis=1, kind="stable")[:, :voters]
    out: list[dict[str, float]] = []
    for row, picked in zip(sims, top, strict=True):
        votes: dict[str, float] = {}
        for j in picked:
            votes[labels[j]] = votes.get(labels[j], 0.0) + float(row[j])
        out.append(votes)
    return out


def ranked(scores: dict[str, float]) -> list[str]:
    return [t for t, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))][:K]


def validate(encode: Encode, data: LabelledData, *, voters: int = VOTERS) -> dict[str, float]:
    """The encoder's figures on the validation examples, every text encoded here."""
    return score(
        encode([e.text for e in data.validation]),
        encode([e.chunk for e in data.train]),
        encode([t.chunk for t in data.techniques]),
        data,
        voters=voters,
    )


def score(
    queries: np.ndarray, voter_rows: np.ndarray, technique_rows: np.ndarray, data: LabelledData, *, voters: int = VOTERS
) -> dict[str, float]:
    """The figures of the validation examples' vectors (`queries`) against the training examples' (`voter_rows`)
    and the techniques' (`technique_rows`), unit rows in `data`'s order: the vote of the nearest training
    examples, the nearest technique documents, and both (the vote plus the technique documents' similarity)."""
    labels = [e.technique for e in data.validation]
    votes = vote_scores(queries @ voter_rows.T, [e.technique for e in data.train], voters)
    tech_sims = queries @ technique_rows.T
    tech_ids = [t.technique for t in data.techniques]
    documents = [dict(zip(tech_ids, (float(s) for s in row), strict=True)) for row in tech_sims]
    both = [
        {t: v.get(t, 0.0) / max(1, voters) * 4 + d.get(t, 0.0) for t in set(v) | set(d)}
        for v, d in zip(votes, documents, strict=True)
    ]
    out: dict[str, float] = {}
    for name, scores in (("vote", votes), ("documents", documents), ("both", both)):
        out.update(figures([ranked(s) for s in scores], labels).as_dict(name))
    out["examples"] = len(labels)
    return out
