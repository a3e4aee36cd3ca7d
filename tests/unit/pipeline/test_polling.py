"""Poll intervals: the registry's or the override, the floor, and a jitter that is the same under one seed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipeline.polling import poll_intervals, with_poll_intervals
from pipeline.sources.registry import default_registry
from secrag.freshness import POLL_FLOOR_SECONDS, POLL_JITTER
from secrag.settings import Settings


def test_jitter_is_deterministic_under_a_seed_and_within_its_share():
    specs = default_registry()
    first, again = poll_intervals(specs, seed="s1"), poll_intervals(specs, seed="s1")
    assert first == again
    assert poll_intervals(specs, seed="s2") != first
    for name, seconds in first.items():
        base = specs[name].poll_interval
        assert abs(seconds - base) <= base * POLL_JITTER + 0.5


def test_sources_sharing_an_interval_never_share_a_second():
    intervals = poll_intervals(default_registry())
    commits = [s for n, s in intervals.items() if default_registry()[n].tracking == "commit"]
    assert len(commits) >= 19 and len(set(commits)) == len(commits)
    assert len(set(intervals.values())) == len(intervals)


def test_the_override_applies_to_every_source_above_the_floor():
    specs = default_registry()
    intervals = poll_intervals(specs, 900, seed="s1")
    assert all(810 <= s <= 990 for s in intervals.values())
    tiny = {n: replace(s, poll_interval=1) for n, s in specs.items()}
    assert min(poll_intervals(tiny, seed="s1").values()) >= POLL_FLOOR_SECONDS
    with pytest.raises(ValueError, match="greater than or equal to 60"):
        Settings(_env_file=None, poll_interval=30)


def test_specs_carry_the_interval_their_sensor_uses():
    specs = with_poll_intervals(default_registry(), seed="s1")
    assert {n: s.poll_interval for n, s in specs.items()} == poll_intervals(default_registry(), seed="s1")
