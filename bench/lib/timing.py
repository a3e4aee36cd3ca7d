"""Latency figures (nearest-rank percentiles) and the CPU a process ran."""

from __future__ import annotations

import math
import os


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank q-th percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def cpu_ns(pid: int, children: bool = False) -> int:
    """CPU ns a process ran (user and system, every thread), or with `children` its children's; 0 once gone."""
    try:
        if children:
            return sum(cpu_ns(int(child)) for child in open(f"/proc/{pid}/task/{pid}/children").read().split())
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0
    return (int(fields[11]) + int(fields[12])) * 10**9 // os.sysconf("SC_CLK_TCK")
