"""The fine-tune's batch plan: seeded batches of distinct labels, `recipe.steps` of them, and no endless pass."""

from __future__ import annotations

import pytest

from pipeline.training.fine_tune import Pair, Recipe, batches


def _pairs(counts: dict[str, int]) -> list[Pair]:
    """`n` pairs of each label, their texts naming the label and the pair's number."""
    return [Pair(f"{label} example {i}", f"{label} text", label) for label, n in counts.items() for i in range(n)]


EVEN = _pairs({f"T{1000 + i}": 5 for i in range(6)})  # six labels, five pairs each


def test_every_batch_holds_distinct_labels_and_there_are_recipe_steps_of_them() -> None:
    recipe = Recipe(steps=25, batch_size=4)
    plan = batches(EVEN, recipe)
    assert len(plan) == recipe.steps
    for batch in plan:
        labels = [p.label for p in batch]
        assert 2 <= len(batch) <= recipe.batch_size
        assert len(set(labels)) == len(labels)  # no in-batch negative is a positive
        assert set(batch) <= set(EVEN)


def test_a_pass_takes_every_pair_once_before_the_next() -> None:
    """Six labels of five pairs in batches of six: five full batches are one pass over all thirty pairs."""
    plan = batches(EVEN, Recipe(steps=10, batch_size=6))
    first_pass = [p for batch in plan[:5] for p in batch]
    assert sorted(first_pass, key=repr) == sorted(EVEN, key=repr)
    assert all(len(batch) == 6 for batch in plan)


def test_the_same_seed_gives_the_same_batches_and_another_seed_others() -> None:
    recipe = Recipe(steps=12, batch_size=4, seed=7)
    assert batches(EVEN, recipe) == batches(EVEN, recipe)
    assert batches(list(EVEN), Recipe(steps=12, batch_size=4, seed=7)) == batches(EVEN, recipe)
    assert batches(EVEN, Recipe(steps=12, batch_size=4, seed=8)) != batches(EVEN, recipe)


@pytest.mark.timeout(60)  # a guard: an endless pass fails here instead of at the suite's timeout
def test_a_pass_with_fewer_than_two_labels_left_starts_the_next_one() -> None:
    """One label with many pairs and one with a single pair: after the first batch only the first label is left
    in the pass, so each following batch needs a new pass (the lone leftover pair waits for it)."""
    skewed = _pairs({"T1059": 9, "T1105": 1})
    recipe = Recipe(steps=15, batch_size=4, seed=3)
    plan = batches(skewed, recipe)
    assert len(plan) == recipe.steps
    assert all(sorted(p.label for p in batch) == ["T1059", "T1105"] for batch in plan)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("pairs", "batch_size"),
    [
        ([], 4),  # nothing to train on
        (_pairs({"T1059": 5}), 4),  # one label: no batch can hold a negative
        (EVEN, 1),  # batches of one pair: no negative either
    ],
    ids=["no-pairs", "one-label", "batch-of-one"],
)
def test_pairs_that_cannot_make_a_batch_of_two_labels_are_refused(pairs: list[Pair], batch_size: int) -> None:
    with pytest.raises(ValueError, match="at least two"):
        batches(pairs, Recipe(steps=3, batch_size=batch_size))


def test_no_steps_no_batches() -> None:
    assert batches(EVEN, Recipe(steps=0)) == []


def test_the_recipe_is_the_models_version() -> None:
    recipe = Recipe(steps=2, batch_size=4, warmup_steps=1)
    assert recipe.as_dict() == {
        "steps": 2,
        "batch_size": 4,
        "learning_rate": 3e-5,
        "warmup_steps": 1,
        "max_tokens": 64,
        "scale": 20.0,
        "seed": 1337,
        "threads": 2,
    }
