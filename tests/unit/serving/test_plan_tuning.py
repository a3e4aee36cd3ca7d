"""Threshold tuning: proposals within bounds, audited and bounded history."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
import yaml

from secrag.errors import ConfigError
from serving.plans import default_plans_file, load_plans
from serving.tuning import LoggedQuery, apply_change, overlay_path, propose, read_overlay


@pytest.fixture
def plans_file(tmp_path: Path) -> Path:
    target = tmp_path / "plans.yaml"
    shutil.copy(default_plans_file(), target)
    return target


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


def test_apply_writes_audit_entry_and_is_loaded(plans_file: Path) -> None:
    config = load_plans(plans_file)
    when = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    entry = apply_change(config, plans_file, "detection", 0.004, who="ana", reason="fewer weak hits", now=when)
    assert entry == {
        "who": "ana",
        "when": "2026-11-22T00:00:00+00:00",
        "query_type": "detection",
        "field": "score_threshold",
        "old": 0.0,
        "new": 0.004,
        "reason": "fewer weak hits",
    }
    assert load_plans(plans_file).resolve("detection").score_threshold == 0.004
    assert "# Retrieval plans" in plans_file.read_text()  # the hand-written file is untouched


def test_history_is_bounded(plans_file: Path) -> None:
    config = load_plans(plans_file)
    for i in range(30):
        apply_change(config, plans_file, "default", 0.001 * (i % 5), who="x", reason=f"r{i}")
    history = read_overlay(plans_file)["history"]
    assert len(history) == config.tuning.history
    assert history[-1]["reason"] == "r29"
    assert yaml.safe_load(overlay_path(plans_file).read_text())["thresholds"]["default"] == 0.004


def test_out_of_bounds_and_reasonless_changes_are_refused(plans_file: Path) -> None:
    config = load_plans(plans_file)
    with pytest.raises(ConfigError, match="safe bounds"):
        apply_change(config, plans_file, "default", 0.95, who="x", reason="r")
    with pytest.raises(ConfigError, match="reason"):
        apply_change(config, plans_file, "default", 0.001, who="x", reason=" ")


def test_logged_shapes_count_for_the_type_they_decide() -> None:
    """/v1/search logs a query's shape: a technique id is a mitre_id query; prose says nothing of its type."""
    config = load_plans(default_plans_file())
    log = [LoggedQuery("technique", 0.6, 3)] * 10 + [LoggedQuery("sub_technique", 0.6, 3)] * 10
    log += [LoggedQuery("keyword", 0.6, 3)] * 30 + [LoggedQuery("weather", 0.6, 3)] * 30
    [p] = propose(config, log, {})
    assert (p.query_type, p.samples) == ("mitre_id", 20)


def test_unknown_query_types_are_refused(plans_file: Path) -> None:
    with pytest.raises(ConfigError, match="unknown query type 'keyword'"):
        apply_change(load_plans(plans_file), plans_file, "keyword", 0.001, who="x", reason="r")
    assert not overlay_path(plans_file).exists()
