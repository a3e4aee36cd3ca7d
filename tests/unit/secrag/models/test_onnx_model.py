"""Pooling the ONNX model's token vectors: mean over the real tokens or the first one, normalised or not."""

from __future__ import annotations

import numpy as np

from secrag.models.onnx_model import pool

HIDDEN = np.array(
    [
        [[3.0, 4.0], [1.0, 0.0], [9.0, 9.0]],  # two tokens and one pad
        [[0.0, 2.0], [2.0, 0.0], [4.0, 4.0]],
    ],
    dtype=np.float32,
)
MASK = np.array([[1, 1, 0], [1, 1, 1]], dtype=np.int64)


def test_mean_pooling_leaves_padding_out() -> None:
    assert np.allclose(pool(HIDDEN, MASK, "mean", normalize=False), [[2.0, 2.0], [2.0, 2.0]])
    unit = pool(HIDDEN, MASK, "mean", normalize=True)
    assert unit.dtype == np.float32 and np.allclose(np.linalg.norm(unit, axis=1), 1.0)


def test_cls_pooling_takes_the_first_token() -> None:
    assert np.allclose(pool(HIDDEN, MASK, "cls", normalize=False), [[3.0, 4.0], [0.0, 2.0]])
    assert np.allclose(pool(HIDDEN, MASK, "cls", normalize=True), [[0.6, 0.8], [0.0, 1.0]])
