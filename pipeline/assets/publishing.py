"""What a publish reports to Dagster: the blocking check results and the count metadata."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from ..store import PublishResult
from .keys import NO_SHRINK, NON_EMPTY

SKIP_SAMPLE = 10


def publish_check_specs(key: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    """Blocking pre-publish checks, evaluated by the store inside the publish transaction."""
    return [
        dg.AssetCheckSpec(
            NON_EMPTY,
            asset=key,
            blocking=True,
            description="The new version has at least one record (else it is refused).",
        ),
        dg.AssetCheckSpec(
            NO_SHRINK,
            asset=key,
            blocking=True,
            description="The new version did not shrink by more than max_shrink, nor any kind of record by more "
            "than its band (registry shape:); else it is refused and the old version stays served.",
        ),
    ]


def publish_checks(
    result: PublishResult, *, previous: int, max_shrink: float, forced: bool
) -> list[dg.AssetCheckResult]:
    """Check results for one publish: a refusal fails the matching check (ERROR, blocking)."""
    refused = result.status == "refused"
    served = result.parsed + result.kept  # a kept document (its file unreadable) stays served
    empty = served == 0
    # A kind of record that shrank past its band is refused as `shrank` too (or, forced, reported), whatever
    # the total did.
    forced_past = list(result.details.get("forced_past") or ())
    kinds_shrank = result.refused == "shrank" or bool(forced_past)
    shrank = (bool(previous) and served < previous * (1 - max_shrink)) or kinds_shrank
    facts: dict[str, Any] = {
        "records": result.parsed,
        "previous_records": previous,
        "max_shrink": max_shrink,
        "forced": forced,
    }
    if refused:
        facts["reason"] = result.reason or ""
    if forced_past:
        facts["forced_past"] = "; ".join(forced_past)

    def outcome(name: str, failed: bool) -> dg.AssetCheckResult:
        if not failed:
            return dg.AssetCheckResult(check_name=name, passed=True, metadata=facts)
        # A forced publish went through anyway: report it, without blocking what follows.
        severity = dg.AssetCheckSeverity.WARN if forced and not refused else dg.AssetCheckSeverity.ERROR
        return dg.AssetCheckResult(check_name=name, passed=False, severity=severity, metadata=facts)

    return [outcome(NON_EMPTY, empty), outcome(NO_SHRINK, shrank and not empty)]


def skipped_sample(details: Mapping[str, Any]) -> str:
    sample = list(details.get("skipped_sample") or [])[:SKIP_SAMPLE]
    return "\n".join(f"- `{line}`" for line in sample) or "none"


def publish_metadata(result: PublishResult) -> dict[str, Any]:
    """Counts of one publish, as asset metadata."""
    return {
        "status": result.status,
        "records": result.parsed,
        "inserted": result.inserted,
        "updated": result.updated,
        "deleted": result.deleted,
        "unchanged": result.unchanged,
        # What the change history (GET /v1/changes) records of this publish.
        "added": result.inserted,
        "modified": result.modified,
        "removed": result.deleted,
        "skipped": result.skipped,
        "skipped_sample": dg.MetadataValue.md(skipped_sample(result.details)),
        "chunks_written": result.chunks_written,
        "artefacts": result.artefacts,  # identifiers for exact lookups (GET /v1/lookup)
        "seconds_publish": round(result.seconds, 3),
    }
