"""Threshold tuning from the opt-in query log: proposals within safe bounds, audited changes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from secrag.errors import ConfigError

from .plan_overlay import load_overlay
from .plan_overlay import overlay_path as overlay_path  # re-exported: `secrag tune` names the file it wrote
from .plans import PlansConfig
from .query_classes import QUERY_TYPES, QueryType, type_of_logged

MIN_SAMPLES = 20


@dataclass(frozen=True)
class LoggedQuery:
    """What the query log keeps of one request; `query_type` is a query shape or type (serving/query_classes.py)."""

    query_type: str
    top_score: float | None
    result_count: int


@dataclass(frozen=True)
class Proposal:
    """A suggested score-threshold change for one query type."""

    query_type: str
    samples: int
    current: float
    proposed: float
    reason: str


def read_overlay(plans_file: Path) -> dict[str, Any]:
    """The overlay beside `plans_file` as plain data: `thresholds` by query type and the `history`."""
    return load_overlay(plans_file).model_dump()


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def propose(config: PlansConfig, log: Sequence[LoggedQuery], thresholds: dict[str, float]) -> list[Proposal]:
    """One proposal per query type with enough samples.

    Target: half the 10th percentile of top scores (so at most ~10 % of queries lose their weakest
    hits), clamped to the configured bounds and moved at most `max_step` from the current value.
    """
    low, high, step = config.tuning.threshold_min, config.tuning.threshold_max, config.tuning.max_step
    by_type: dict[QueryType, list[LoggedQuery]] = {}
    for entry in log:
        # A keyword or prose search says nothing of its type (the plan classifier would), so only the
        # shapes that decide a type (a technique id, a CVE) and logged types are tuned.
        query_type = type_of_logged(entry.query_type)
        if query_type is not None:
            by_type.setdefault(query_type, []).append(entry)
    proposals = []
    for query_type in sorted(by_type):
        entries = by_type[query_type]
        scores = [e.top_score for e in entries if e.top_score is not None]
        current = thresholds.get(query_type, config.resolve(query_type).score_threshold)
        if len(scores) < MIN_SAMPLES:
            continue
        empty = sum(1 for e in entries if e.result_count == 0) / len(entries)
        target = min(high, max(low, _percentile(scores, 0.10) / 2))
        proposed = round(min(current + step, max(current - step, target)), 6)
        if abs(proposed - current) < 1e-9:
            continue
        reason = (
            f"{len(scores)} queries: p10 top score {_percentile(scores, 0.10):.4f}, "
            f"{empty:.0%} returned nothing; target {target:.4f} within [{low}, {high}], step <= {step}"
        )
        proposals.append(Proposal(query_type, len(scores), current, proposed, reason))
    return proposals


@dataclass(frozen=True)
class ClassScores:
    """Top scores of one query class in the log: how many, mean, 25th percentile, minimum."""

    query_class: str
    count: int
    empty: int
    mean: float | None
    p25: float | None
    minimum: float | None


def class_scores(log: Sequence[LoggedQuery]) -> list[ClassScores]:
    """Per query class (shape or type as logged), the top-score figures of `secrag tune report`."""
    by_class: dict[str, list[LoggedQuery]] = {}
    for entry in log:
        by_class.setdefault(entry.query_type, []).append(entry)
    figures = []
    for name in sorted(by_class):
        entries = by_class[name]
        scores = [e.top_score for e in entries if e.top_score is not None]
        empty = sum(1 for e in entries if e.result_count == 0)
        if scores:
            figures.append(
                ClassScores(
                    name, len(entries), empty, sum(scores) / len(scores), _percentile(scores, 0.25), min(scores)
                )
            )
        else:
            figures.append(ClassScores(name, len(entries), empty, None, None, None))
    return figures


def apply_change(
    config: PlansConfig,
    plans_file: Path,
    query_type: str,
    new: float,
    *,
    who: str,
    reason: str,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Record an approved threshold in the overlay with who, when, old, new and reason."""
    if query_type not in QUERY_TYPES:
        raise ConfigError(f"unknown query type {query_type!r}; known: {', '.join(QUERY_TYPES)}")
    low, high = config.tuning.threshold_min, config.tuning.threshold_max
    if not low <= new <= high:
        raise ConfigError(f"threshold {new} is outside the safe bounds [{low}, {high}]")
    if not reason.strip():
        raise ConfigError("a reason is required")
    overlay = read_overlay(plans_file)
    old = overlay["thresholds"].get(query_type, config.resolve(query_type).score_threshold)
    entry = {
        "who": who,
        "when": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
        "query_type": query_type,
        "field": "score_threshold",
        "old": old,
        "new": new,
        "reason": reason,
    }
    overlay["thresholds"][query_type] = new
    keep = config.tuning.history
    overlay["history"] = [*overlay["history"], entry][-keep:]
    overlay_path(plans_file).write_text(yaml.safe_dump(overlay, sort_keys=False), encoding="utf-8")
    return entry
