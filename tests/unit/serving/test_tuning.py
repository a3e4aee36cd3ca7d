"""Threshold proposals from the query log: enough samples, bounded steps, a confidence that grows with the
samples (the audited writes: tests/integration/secrag_cli/test_tuning_audit.py)."""

from __future__ import annotations

import pytest

from serving.feedback.tuning import MIN_SAMPLES, LoggedQuery, confidence, propose
from serving.plans.plans_file import load_plans
from serving.settings.api import default_plans_file


def test_no_proposal_without_enough_samples() -> None:
    config = load_plans(default_plans_file())
    assert propose(config, [LoggedQuery("detection", 0.03, 5)] * 5, {}) == []


def test_proposals_move_at_most_one_step_towards_the_target() -> None:
    config = load_plans(default_plans_file())
    log = [LoggedQuery("detection", 0.6, 10)] * 40
    [p] = propose(config, log, {})
    step = config.tuning.max_step
    assert p.current == 0.0 and p.proposed == pytest.approx(step)
    assert "40 queries" in p.reason


def test_proposals_start_from_the_tuned_value() -> None:
    config = load_plans(default_plans_file())
    [p] = propose(config, [LoggedQuery("detection", 0.6, 10)] * 40, {"detection": 0.2})
    assert p.current == 0.2 and p.proposed == pytest.approx(0.2 + config.tuning.max_step)


def test_confidence_grows_with_the_samples() -> None:
    config = load_plans(default_plans_file())
    few = propose(config, [LoggedQuery("detection", 0.6, 10)] * MIN_SAMPLES, {})[0].confidence
    many = propose(config, [LoggedQuery("detection", 0.6, 10)] * 500, {})[0].confidence
    assert 0 < few < many < 1
    assert confidence(50) == 0.5


def test_logged_shapes_count_for_the_type_they_decide() -> None:
    """/v1/search logs a query's shape: a technique id is a mitre_id query; prose says nothing of its type."""
    config = load_plans(default_plans_file())
    log = [LoggedQuery("technique", 0.6, 3)] * 10 + [LoggedQuery("sub_technique", 0.6, 3)] * 10
    log += [LoggedQuery("keyword", 0.6, 3)] * 30 + [LoggedQuery("weather", 0.6, 3)] * 30
    [p] = propose(config, log, {})
    assert (p.query_type, p.samples) == ("mitre_id", 20)
