"""A text's sentences against the sentence model's vectors of ATT&CK held in memory: for each sentence, its nearest
procedure examples vote for their techniques (each by its cosine similarity) and its nearest technique documents
add their own similarity; each sentence's candidates carry the features the verifier (secrag/mapping/verifier.py)
or the selector (serving/mapping/selector.py) turns into a probability. One matrix product per source for all
sentences and no statement. The training of the verifier (pipeline/training/verifier_data.py) computes the same
candidates for procedure examples, each with its own actor's examples left out (`exclude`)."""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from secrag.identifiers import is_technique_id

ATTACK_PREFIX = "mitre_attack:"


@dataclass(frozen=True)
class Candidate:
    """One technique a sentence may describe, with the evidence for it."""

    technique: str
    share: float  # its examples' share of the nearest examples' similarity (0..1)
    vote_rank: int  # 1-based among the sentence's techniques by vote (0: no vote)
    doc_sim: float  # the best cosine similarity of its document's chunks
    doc_rank: int  # 1-based among the technique documents by doc_sim
    doc_margin: float  # doc_sim minus the sentence's best doc_sim (0 for the best)
    share_margin: float  # share minus the best other technique's share
    example_sim: float  # the best similarity of its examples among the nearest (0: none)
    near_sim: float  # the mean similarity of the sentence's nearest examples (how close it is to any)
    named: bool  # the sentence writes its id
    name_found: bool  # the sentence writes its name
    chunk_id: str  # its document's chunk nearest the sentence (the citation)
    example_margin: float = 0.0  # example_sim minus the best other technique's example_sim
    family_margin: float = 0.0  # doc_sim minus the best doc_sim of its parent and siblings (or children); 0: none
    parent_margin: float = 0.0  # a sub-technique's doc_sim minus its parent's; a parent's minus its best child's


class HeldRows(Protocol):
    """One source's held vectors (serving/search/source_vectors.py Held): unit rows with their ids and labels."""

    @property
    def chunk_ids(self) -> list[str]: ...
    @property
    def doc_ids(self) -> list[str]: ...
    @property
    def matrix(self) -> np.ndarray: ...
    @property
    def labels(self) -> tuple[tuple[str, ...], ...]: ...


@dataclass(frozen=True)
class HeldAttack:
    """The held vectors the votes read: the procedure examples with their labels, and the technique documents'
    chunks grouped by technique (rows of one technique together, `starts` where each begins)."""

    examples: np.ndarray
    example_labels: list[tuple[str, ...]]
    documents: np.ndarray
    techniques: list[str]  # one per group
    starts: np.ndarray  # first row of each group
    chunks: list[str]  # one per row
    family: np.ndarray  # per technique, the group index of its parent's id (parents: their own)

    @classmethod
    def of(cls, procedures: Sequence[HeldRows], attack: Sequence[HeldRows]) -> HeldAttack:
        rows: list[tuple[str, str, np.ndarray]] = []
        for held in attack:
            for i, doc_id in enumerate(held.doc_ids):
                local = doc_id.removeprefix(ATTACK_PREFIX)
                if doc_id.startswith(ATTACK_PREFIX) and is_technique_id(local):
                    rows.append((local, held.chunk_ids[i], held.matrix[i]))
        rows.sort(key=lambda r: (r[0], r[1]))
        techniques = list(dict.fromkeys(r[0] for r in rows))
        group = {t: i for i, t in enumerate(techniques)}
        starts = np.searchsorted([group[r[0]] for r in rows], np.arange(len(techniques)))
        dims = attack[0].matrix.shape[1] if attack else 1
        return cls(
            examples=_rows([h.matrix for h in procedures], dims),
            example_labels=[label for h in procedures for label in h.labels],
            documents=np.stack([r[2] for r in rows]) if rows else np.zeros((0, dims), np.float32),
            techniques=techniques,
            starts=np.asarray(starts, dtype=np.intp),
            chunks=[r[1] for r in rows],
            family=_families(techniques),
        )


def _families(techniques: Sequence[str]) -> np.ndarray:
    """Each technique's family as a number: the index of its parent id's first appearance."""
    first: dict[str, int] = {}
    return np.asarray([first.setdefault(t.split(".", 1)[0], i) for i, t in enumerate(techniques)], dtype=np.intp)


def _rows(matrices: list[np.ndarray], dims: int) -> np.ndarray:
    """The matrices as one (a single one as it is: no copy of 16,000 rows per map)."""
    if len(matrices) == 1:
        return matrices[0]
    return np.concatenate(matrices) if matrices else np.zeros((0, dims), np.float32)


def candidates(
    queries: np.ndarray,
    held: HeldAttack,
    *,
    voters: int,
    top: int,
    named: Sequence[Set[str]],
    names_found: Sequence[Set[str]],
    exclude: Sequence[np.ndarray] | None = None,
) -> list[list[Candidate]]:
    """Each sentence's candidates (unit rows `queries`, in order): the `top` techniques by vote share, the `top`
    by document similarity and every technique it names, best share first. `exclude`: per sentence, the example
    rows that may not vote for it (a training example's own actor's)."""
    if not len(queries) or not held.techniques:
        return [[] for _ in range(len(queries))]
    example_sims = queries @ held.examples.T
    if exclude is not None:
        for i, rows in enumerate(exclude):
            example_sims[i, rows] = -np.inf
    doc_sims = queries @ held.documents.T
    technique_sims = np.maximum.reduceat(doc_sims, held.starts, axis=1)  # each technique's best chunk
    ends = [*held.starts[1:], len(held.chunks)]
    index = {t: i for i, t in enumerate(held.techniques)}
    k = min(voters, example_sims.shape[1])
    families = {int(f): np.flatnonzero(held.family == f) for f in np.unique(held.family)}
    out: list[list[Candidate]] = []
    for i in range(len(queries)):
        shares: dict[str, float] = {}
        best_example: dict[str, float] = {}
        near = 0.0
        if k:
            picked = np.argpartition(-example_sims[i], k - 1)[:k]
            picked = picked[np.isfinite(example_sims[i, picked])]
            total = float(example_sims[i, picked].sum())
            near = total / k
            for j in picked:
                sim = float(example_sims[i, j])
                for label in held.example_labels[j]:
                    shares[label] = shares.get(label, 0.0) + sim / max(total, 1e-9)
                    best_example[label] = max(best_example.get(label, 0.0), sim)
        by_vote = sorted(shares, key=lambda t: (-shares[t], t))
        vote_rank = {t: r for r, t in enumerate(by_vote, start=1)}
        sims = technique_sims[i]
        order = np.argsort(-sims, kind="stable")
        doc_rank = {held.techniques[g]: r for r, g in enumerate(order, start=1)}
        best_sim = float(sims[order[0]])
        by_doc = [held.techniques[g] for g in order[:top]]
        chosen = dict.fromkeys([*by_vote[:top], *by_doc, *sorted(named[i])])
        found: list[Candidate] = []
        for technique in chosen:
            g = index.get(technique)
            if g is None:
                continue  # a technique without a document (revoked, another domain's)
            start, end = int(held.starts[g]), int(ends[g])
            row = start + int(np.argmax(doc_sims[i, start:end]))
            share = shares.get(technique, 0.0)
            others = max((s for t, s in shares.items() if t != technique), default=0.0)
            example = best_example.get(technique, 0.0)
            other_example = max((s for t, s in best_example.items() if t != technique), default=0.0)
            sim = float(sims[g])
            family, parent = _family_margins(sims, families[int(held.family[g])], g, technique, index)
            found.append(
                Candidate(
                    technique=technique,
                    share=round(share, 6),
                    vote_rank=vote_rank.get(technique, 0),
                    doc_sim=round(sim, 6),
                    doc_rank=doc_rank[technique],
                    doc_margin=round(sim - best_sim, 6),
                    share_margin=round(share - others, 6),
                    example_sim=round(example, 6),
                    near_sim=round(near, 6),
                    example_margin=round(example - other_example, 6),
                    family_margin=round(family, 6),
                    parent_margin=round(parent, 6),
                    named=technique in named[i],
                    name_found=technique in names_found[i],
                    chunk_id=held.chunks[row],
                )
            )
        found.sort(key=lambda c: (-c.share, -c.doc_sim, c.technique))
        out.append(found)
    return out


def _family_margins(
    sims: np.ndarray, members: np.ndarray, g: int, technique: str, index: dict[str, int]
) -> tuple[float, float]:
    """(doc_sim minus the best of its family's other techniques, doc_sim minus its parent's or best child's)."""
    others = members[members != g]
    sim = float(sims[g])
    if not len(others):
        return 0.0, 0.0
    family_margin = sim - float(sims[others].max())
    if "." in technique:
        parent = index.get(technique.split(".", 1)[0])
        return family_margin, (sim - float(sims[parent])) if parent is not None else 0.0
    return family_margin, family_margin  # a parent's others are its children
