"""The verifier's and the behaviour gate's fits on the held-back actors' examples (pipeline/training/verifier.py,
behaviour_gate.py) over hand-made candidates and vectors: folds by actor, each fold scored by a model that never saw
its actors, and the figures of those scores."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.training.behaviour_gate import Texts, fit_gate, unit
from pipeline.training.examples import Example
from pipeline.training.verifier import actor_folds, cross_fit, ranking_figures
from secrag.mapping.candidates import Candidate

TECHNIQUES = ("T1003.001", "T1059.001", "T1105")


def _candidate(technique: str, sim: float, rank: int) -> Candidate:
    return Candidate(
        technique=technique,
        share=sim / 2,
        vote_rank=rank,
        doc_sim=sim,
        doc_rank=rank,
        doc_margin=0.0,
        share_margin=0.0,
        example_sim=sim,
        near_sim=0.5,
        named=False,
        name_found=False,
        chunk_id=f"mitre_attack:{technique}#0",
    )


def _data(actors: int, per_actor: int, seed: int = 7) -> tuple[list[Example], list[list[Candidate]]]:
    """Examples whose right candidate is usually the most similar, but the vote (the order) puts it last."""
    rng = np.random.default_rng(seed)
    examples: list[Example] = []
    found: list[list[Candidate]] = []
    for a in range(actors):
        for i in range(per_actor):
            technique = TECHNIQUES[(a + i) % len(TECHNIQUES)]
            examples.append(Example(f"ex-{a}-{i}", "text", technique, f"G{a:04d}", "chunk"))
            sims = rng.uniform(0.2, 0.6, len(TECHNIQUES))
            sims[TECHNIQUES.index(technique)] += 0.3
            others = [t for t in TECHNIQUES if t != technique]
            order = [*others, technique]  # the vote's first candidate is always wrong
            found.append([_candidate(t, float(sims[TECHNIQUES.index(t)]), r) for r, t in enumerate(order, 1)])
    return examples, found


def test_an_actors_examples_share_one_fold_and_every_fold_is_used() -> None:
    examples, _ = _data(actors=11, per_actor=3)
    folds = actor_folds(examples, 5)
    assert set(folds) == set(range(5))
    by_actor: dict[str, set[int]] = {}
    for example, fold in zip(examples, folds, strict=True):
        by_actor.setdefault(example.actor, set()).add(fold)
    assert all(len(f) == 1 for f in by_actor.values())
    assert actor_folds(list(reversed(examples)), 5) == list(reversed(folds))  # by actor, not by position
    with pytest.raises(ValueError, match="two actors"):
        actor_folds(examples[:3], 5)  # one actor


def test_each_fold_is_scored_by_a_verifier_that_never_saw_its_actors() -> None:
    examples, found = _data(actors=10, per_actor=6)
    verifier, scored = cross_fit("m-int8", found, examples, folds=5, c=1.0)
    assert [len(s) for s in scored] == [len(c) for c in found]
    # relabel fold 0's examples: the whole-data verifier changes, fold 0's own scores do not
    folds = actor_folds(examples, 5)
    moved = [
        dataclasses.replace(e, technique=TECHNIQUES[(TECHNIQUES.index(e.technique) + 1) % 3]) if f == 0 else e
        for e, f in zip(examples, folds, strict=True)
    ]
    other, rescored = cross_fit("m-int8", found, moved, folds=5, c=1.0)
    for i, fold in enumerate(folds):
        if fold == 0:
            assert np.allclose(scored[i], rescored[i])
    assert not np.allclose(verifier.coef, other.coef)
    figures = ranking_figures(scored, found, examples)
    assert figures["vote_p1"] == 0.0 and figures["reachable"] == 1.0
    assert figures["verifier_p1"] > 0.8  # the similarity the verifier learnt beats the vote's order
    assert figures["validation_examples"] == len(examples)


def test_a_fit_without_right_or_wrong_candidates_is_refused() -> None:
    examples, found = _data(actors=4, per_actor=2)
    only_right = [[c for c in cands if c.technique == e.technique] for cands, e in zip(found, examples, strict=True)]
    with pytest.raises(ValueError, match="right and wrong"):
        cross_fit("m-int8", only_right, examples, folds=2, c=1.0)


class _Encoder:
    """Sentences about no procedure near the second axis (a stand-in for the sentence model)."""

    model_id = "fake"
    dimensions = 4

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(len(texts))
        return np.asarray([[0.1, 1.0, 0.0, 0.0]] * len(texts)) + rng.normal(0, 0.3, (len(texts), 4))


def test_the_gate_fitted_on_folds_of_positives_keeps_its_share_of_them() -> None:
    rng = np.random.default_rng(3)
    texts = [f"The actor used tool {i} to run a payload on the host." for i in range(60)]
    positives = Texts(texts, unit(np.asarray([[1.0, 0.1, 0.0, 0.0]] * 60) + rng.normal(0, 0.3, (60, 4))))
    negatives = [f"Mitigation {i}: keep software up to date across the fleet." for i in range(200)]
    folds = [i % 4 for i in range(60)]
    gate, figures = fit_gate(positives, folds, negatives, _Encoder(), holdout=4, keep=0.9, c=1.0)  # type: ignore[arg-type]
    assert figures["gate_kept_examples"] >= 0.88  # the share of cross-fitted positives it lets through
    assert figures["gate_set_aside_negatives"] > 0.5 and 0.0 < gate.threshold < 1.0
    same, again = fit_gate(positives, positives, negatives, _Encoder(), holdout=4, keep=0.9, c=1.0)  # type: ignore[arg-type]
    assert np.allclose(same.coef, gate.coef)  # one fit on every positive, whichever examples set the threshold
    assert again["gate_kept_examples"] >= 0.88
