"""bench/adapter.py: the query-side adapter's training (from the identity, early stopped on a dev slice) and the
even spread of a limited run's examples."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # a script beside its siblings
from adapter import AdapterConfig, dev_actor, spread, train_adapter  # noqa: E402

from pipeline.training.examples import Example  # noqa: E402


def unit(rows: np.ndarray) -> np.ndarray:
    return np.asarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), dtype=np.float32)


def permuted_problem(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries of class y lie near the target row of another class: the identity ranks the wrong row first, a
    permutation of the axes ranks the right one."""
    rng = np.random.default_rng(seed)
    d = 8
    targets = np.eye(d, dtype=np.float32)
    perm = np.roll(np.arange(d), 1)
    labels = rng.integers(0, d, n)
    queries = unit(targets[perm[labels]] + 0.1 * rng.normal(size=(n, d)))
    return queries, labels, targets


def top1(rows: np.ndarray, labels: np.ndarray, targets: np.ndarray) -> float:
    return float(((rows @ targets.T).argmax(axis=1) == labels).mean())


def test_the_adapter_learns_the_permutation_the_identity_misses() -> None:
    queries, labels, targets = permuted_problem(0, 400)
    dev_q, dev_y, _ = permuted_problem(1, 100)
    assert top1(queries, labels, targets) == 0.0
    adapter = train_adapter(queries, labels, targets, dev_q, dev_y, AdapterConfig(epochs=30, lr=0.05))
    assert adapter.best_epoch > 0
    assert adapter.dev_loss[adapter.best_epoch] < adapter.dev_loss[0]
    test_q, test_y, _ = permuted_problem(2, 200)
    assert top1(adapter.apply(test_q), test_y, targets) >= 0.95
    assert np.allclose(np.linalg.norm(adapter.apply(test_q), axis=1), 1.0, atol=1e-5)
    assert adapter.bias is None


def test_no_epochs_keep_the_identity_and_the_training_is_seeded() -> None:
    queries, labels, targets = permuted_problem(0, 64)
    kept = train_adapter(queries, labels, targets, queries[:8], labels[:8], AdapterConfig(epochs=0, bias=True))
    assert kept.best_epoch == 0
    assert np.array_equal(kept.weight, np.eye(8, dtype=np.float32))
    assert kept.bias is not None and not kept.bias.any()
    assert np.allclose(kept.apply(queries), queries, atol=1e-6)
    config = AdapterConfig(epochs=3, bias=True, lr=0.01, batch_size=16)
    first = train_adapter(queries, labels, targets, queries[:8], labels[:8], config)
    again = train_adapter(queries, labels, targets, queries[:8], labels[:8], config)
    assert np.array_equal(first.weight, again.weight)
    assert first.dev_loss == again.dev_loss


def test_the_training_stops_after_patience_epochs_without_a_better_dev_loss() -> None:
    queries, labels, targets = permuted_problem(0, 200)
    # Dev rows labelled as the identity would rank them: learning the permutation makes their loss worse.
    dev_q, dev_y, _ = permuted_problem(1, 50)
    dev_y = np.roll(np.arange(8), 1)[dev_y]
    adapter = train_adapter(queries, labels, targets, dev_q, dev_y, AdapterConfig(epochs=20, lr=0.05, patience=2))
    assert adapter.best_epoch == 0
    assert len(adapter.dev_loss) == 3  # epoch 0 and the two without a gain
    assert np.array_equal(adapter.weight, np.eye(8, dtype=np.float32))


def test_no_dev_rows_is_an_error() -> None:
    queries, labels, targets = permuted_problem(0, 16)
    with pytest.raises(ValueError, match="dev"):
        train_adapter(queries, labels, targets, queries[:0], labels[:0], AdapterConfig(epochs=1))


def example(i: int) -> Example:
    return Example(f"d{i}", "text", "T1005", f"actor{i}", "chunk")


def test_a_limit_spreads_the_examples_evenly_and_zero_keeps_all() -> None:
    rows = [example(i) for i in range(10)]
    assert [e.doc_id for e in spread(rows, 4)] == ["d0", "d2", "d5", "d7"]
    assert spread(rows, 0) == tuple(rows)
    assert spread(rows, 50) == tuple(rows)


def test_the_dev_slice_is_about_one_actor_in_eight_and_stable() -> None:
    actors = [f"intrusion-set--{i}" for i in range(800)]
    picked = [a for a in actors if dev_actor(a)]
    assert 60 <= len(picked) <= 140
    assert picked == [a for a in actors if dev_actor(a)]
