"""Latency figures: nearest-rank percentiles."""

from __future__ import annotations

import math


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank q-th percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]
