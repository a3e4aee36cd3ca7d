"""The refresh-health verdict: a failed last attempt or missing technique names fail the check."""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline.checks import refresh_verdict

AT = datetime(2026, 11, 23, tzinfo=UTC)


def test_a_published_attempt_with_full_enrichment_passes() -> None:
    passed, facts = refresh_verdict(("published", "publish", "v2", None, None, None, AT), 0, 40)
    assert passed and facts["enrichment_coverage"] == 1.0 and "why" not in facts


def test_no_attempt_yet_and_no_technique_documents_pass() -> None:
    assert refresh_verdict(None, 0, 0)[0]


def test_failed_refused_and_abandoned_attempts_fail_with_their_phase() -> None:
    for status in ("failed", "refused", "abandoned"):
        passed, facts = refresh_verdict((status, "fetch", "v3", "FetchError", "fetch_failed", "HTTP 503", AT), 0, 10)
        assert not passed and (facts["phase"], facts["error_kind"]) == ("fetch", "fetch_failed")
        assert facts["why"] == f"the last attempt {status} in fetch"


def test_missing_technique_names_fail_even_after_a_good_attempt() -> None:
    passed, facts = refresh_verdict(("published", "publish", "v2", None, None, None, AT), 3, 40)
    assert not passed and facts["enrichment_coverage"] == 0.925 and "3 documents lack" in facts["why"]
