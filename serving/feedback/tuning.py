"""Threshold proposals from the opt-in query log: within safe bounds, each with a confidence (the audited
writes: secrag_cli/tuning_audit.py; the live read: serving/feedback/tuned_plans.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from serving.contract.query_classes import QueryType, type_of_logged
from serving.plans.plans_file import PlansConfig

MIN_SAMPLES = 20
# A proposal's confidence is n / (n + CONFIDENCE_HALF) for the n logged queries behind it: 0.29 at the
# minimum of 20, 0.5 at 50, 0.67 at 100, 0.91 at 500.
CONFIDENCE_HALF = 50


@dataclass(frozen=True)
class LoggedQuery:
    """What the query log keeps of one request; `query_type` is a query shape or type
    (serving/contract/query_classes.py)."""

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
    confidence: float  # grows with the samples: confidence()


def confidence(samples: int) -> float:
    """How much a proposal from `samples` logged queries is to be trusted, in [0, 1)."""
    return round(samples / (samples + CONFIDENCE_HALF), 2)


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
        proposals.append(Proposal(query_type, len(scores), current, proposed, reason, confidence(len(scores))))
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
