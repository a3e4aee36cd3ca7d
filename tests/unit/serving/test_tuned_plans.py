"""The plans in force: the plans file with the store's tuned thresholds, rows it no longer admits ignored."""

from __future__ import annotations

import logging

import pytest

from serving.feedback.tuned_plans import TunedPlans
from serving.plans.plans_file import load_plans
from serving.settings.api import default_plans_file


def test_tuned_thresholds_override_the_plans_file() -> None:
    base = load_plans(default_plans_file())
    rows = {"detection": 0.04}
    tuned = TunedPlans(base, read=lambda: rows)
    assert tuned.current().resolve("detection").score_threshold == 0.04
    assert tuned.current().resolve("forensic").score_threshold == base.resolve("forensic").score_threshold
    assert base.resolve("detection").score_threshold == 0.0  # the base is not changed


def test_a_row_the_plans_file_does_not_admit_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    base = load_plans(default_plans_file())
    tuned = TunedPlans(base, read=lambda: {"weather": 0.1, "detection": 7.0, "forensic": 0.02})
    with caplog.at_level(logging.WARNING, logger="serving.feedback.tuned_plans"):
        config = tuned.current()
    assert config.resolve("forensic").score_threshold == 0.02
    assert config.resolve("detection").score_threshold == base.resolve("detection").score_threshold
    assert "weather" in caplog.text and "detection=7.0" in caplog.text


def test_the_store_is_read_at_most_once_per_ttl() -> None:
    reads = []

    def read() -> dict[str, float]:
        reads.append(1)
        return {}

    tuned = TunedPlans(load_plans(default_plans_file()), read=read)
    first = tuned.current()
    assert tuned.current() is first and len(reads) == 1


def test_a_failed_read_keeps_the_last_values(caplog: pytest.LogCaptureFixture) -> None:
    import psycopg

    calls = []

    def read() -> dict[str, float]:
        calls.append(1)
        if len(calls) > 1:
            raise psycopg.OperationalError("server closed the connection")
        return {"detection": 0.04}

    tuned = TunedPlans(load_plans(default_plans_file()), read=read)
    assert tuned.current().resolve("detection").score_threshold == 0.04
    tuned._rows.at = 0.0  # the value is due again
    with caplog.at_level(logging.WARNING, logger="serving.feedback.tuned_plans"):
        assert tuned.current().resolve("detection").score_threshold == 0.04
    assert "cannot read the tuned thresholds" in caplog.text
