"""Each source's poll interval as its sensor uses it: the registry's, or the one override for all, never under
the floor, and jittered: the sources sharing an interval get intervals spread evenly over ±POLL_JITTER of it,
in an order drawn from a seed. Their sensors then drift apart instead of probing in the same second, and a
reload of the code location gives every source the same interval as before."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace

from secrag.freshness import POLL_FLOOR_SECONDS, POLL_JITTER

from .sources.registry import SourceSpec

JITTER_SEED = "secrag-poll"


def poll_intervals(
    specs: Mapping[str, SourceSpec], override: int | None = None, *, seed: str = JITTER_SEED, share: float = POLL_JITTER
) -> dict[str, int]:
    """Seconds between two probes of each source."""
    groups: dict[int, list[str]] = defaultdict(list)
    for name, spec in specs.items():
        groups[max(POLL_FLOOR_SECONDS, override or spec.poll_interval)].append(name)
    intervals: dict[str, int] = {}
    for seconds, names in groups.items():
        order = sorted(names)
        random.Random(f"{seed}:{seconds}").shuffle(order)  # noqa: S311 - spreading probes, not secrecy
        for rank, name in enumerate(order):
            offset = share * (2 * rank / (len(order) - 1) - 1) if len(order) > 1 else 0.0
            intervals[name] = max(POLL_FLOOR_SECONDS, round(seconds * (1 + offset)))
    return intervals


def with_poll_intervals(
    specs: Mapping[str, SourceSpec], override: int | None = None, *, seed: str = JITTER_SEED
) -> dict[str, SourceSpec]:
    """The specs with the intervals their sensors, freshness checks and source rows use."""
    intervals = poll_intervals(specs, override, seed=seed)
    return {name: replace(spec, poll_interval=intervals[name]) for name, spec in specs.items()}
