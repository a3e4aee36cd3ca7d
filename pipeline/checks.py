"""Asset checks after publish and embedding: technique ids resolve, freshness, coverage, dimensions.

The blocking pre-publish checks (non-empty, no suspicious shrink) are reported by the publishing
assets themselves (assets/publishing.py): the store evaluates them inside the publish transaction.
"""

from datetime import UTC, datetime
from typing import Any

import dagster as dg

from secrag.db.queries import Queries, one_row
from secrag.freshness import REFRESH_ALLOWANCE_SECONDS, SourceClock, verdict, window_seconds

from .assets.keys import COVERAGE, DIMENSIONS, FRESHNESS, REFRESH_OK, TECHNIQUES_RESOLVE, embeddings_key, source_key
from .resources import EmbedderResource, StoreResource

UNRESOLVED_SAMPLE = 20


def build_technique_check(source: str, key: dg.AssetKey | None = None) -> dg.AssetChecksDefinition:
    """Technique ids the source's documents reference exist in lookups/mitre_techniques (WARN)."""

    @dg.asset_check(
        asset=key or source_key(source),
        name=TECHNIQUES_RESOLVE,
        description="Every ATT&CK technique id referenced by the documents resolves in "
        "lookups/mitre_techniques (revoked ids resolve to their redirect).",
    )
    def _check(store: StoreResource) -> dg.AssetCheckResult:
        q = Queries(store.sql_path(), "pipeline")
        with store.connect() as conn:
            references = int(one_row(conn.execute(q.technique_reference_count, {"source": source}))[0])
            lookup = one_row(conn.execute(q.lookup_size))[0]
            unresolved = conn.execute(q.unresolved_techniques, {"source": source}).fetchall()
        return dg.AssetCheckResult(
            passed=not unresolved,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "references": references,
                "unresolved_ids": len(unresolved),
                "lookup_techniques": lookup,
                "unresolved_sample": ", ".join(f"{tid} ({n})" for tid, n in unresolved[:UNRESOLVED_SAMPLE]),
            },
        )

    return _check


def freshness_verdict(state: tuple[Any, ...] | None, poll_interval: int, now: datetime) -> tuple[bool, dict[str, Any]]:
    """The source's freshness (secrag/freshness.py: the rule GET /v1/sources applies too) and its facts."""
    if state is None:
        return False, {"reason": "source never registered"}
    current, seen, checked_at, synced_at, status, records, error_kind, seen_since = state
    judged = verdict(SourceClock(poll_interval, current, seen, checked_at, seen_since), now)
    assert judged is not None  # a poll interval is given
    facts: dict[str, object] = {
        "poll_interval_seconds": poll_interval,
        "window_seconds": judged.window_seconds,
        "current_version": current or "",
        "last_seen_version": seen or "",
        "state": status,
        "records": records,
    }
    for name, at in (("last_check", checked_at), ("last_sync", synced_at), ("seen_since", seen_since)):
        if at is not None:
            facts[f"{name}_age_seconds"] = round((now - at).total_seconds())
    if error_kind:
        facts["error_kind"] = error_kind
    if judged.reason:
        facts["reason"] = judged.reason
    return judged.fresh, facts


def freshness_evaluation(source: str, passed: bool, facts: dict[str, Any]) -> dg.AssetCheckEvaluation:
    """The freshness check's result as the source's sensor reports it, without a run."""
    return dg.AssetCheckEvaluation(
        asset_key=source_key(source),
        check_name=FRESHNESS,
        passed=passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=facts,
    )


def build_freshness_check(source: str, poll_interval: int) -> dg.AssetChecksDefinition:

    @dg.asset_check(
        asset=source_key(source),
        name=FRESHNESS,
        description=f"Upstream answered a probe within {window_seconds(poll_interval)}s (two poll intervals of "
        f"{poll_interval}s, plus {REFRESH_ALLOWANCE_SECONDS}s for a refresh) and no newer version has waited longer "
        "to be published. The source's sensor reports it whenever it changes; the hourly schedule runs it too.",
    )
    def _check(store: StoreResource) -> dg.AssetCheckResult:
        q = Queries(store.sql_path(), "pipeline")
        with store.connect() as conn:
            state = conn.execute(q.source_state, {"source": source}).fetchone()
        passed, facts = freshness_verdict(state, poll_interval, datetime.now(UTC))
        return dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=facts)

    return _check


def refresh_verdict(attempt: tuple[Any, ...] | None, unenriched: int, bearing: int) -> tuple[bool, dict[str, Any]]:
    """Healthy = the last finished attempt (the one the source's state comes from) did not fail (failed,
    refused, abandoned) and every document that names a technique carries its name (coverage 100 %)."""
    facts: dict[str, Any] = {"technique_bearing_documents": bearing, "unenriched_documents": unenriched}
    if bearing:
        facts["enrichment_coverage"] = round(1 - unenriched / bearing, 4)
    reasons = []
    if attempt is not None:
        status, phase, version, error_class, error_kind, detail, started_at = attempt
        facts.update({"last_attempt": status, "last_attempt_at": started_at.isoformat(), "version": version or ""})
        if status in ("failed", "refused", "abandoned"):
            facts.update(
                {
                    "phase": phase or "",
                    "error_kind": error_kind or "",
                    "error_class": error_class or "",
                    "error_detail": (detail or "")[:2000],  # the Dagster UI is the operators'
                }
            )
            reasons.append(f"the last attempt {status}" + (f" in {phase}" if phase else ""))
    if unenriched:
        reasons.append(f"{unenriched} documents lack their technique names")
    if reasons:
        facts["why"] = "; ".join(reasons)
    return not reasons, facts


def build_refresh_check(source: str) -> dg.AssetChecksDefinition:
    """The source's last refresh attempt succeeded and its enrichment coverage is complete (ERROR)."""

    @dg.asset_check(
        asset=source_key(source),
        name=REFRESH_OK,
        description="The last refresh attempt did not fail (probe, fetch, parse or publish; refused or "
        "abandoned count too) and every document naming an ATT&CK technique carries its name.",
    )
    def _check(store: StoreResource) -> dg.AssetCheckResult:
        q = Queries(store.sql_path(), "pipeline")
        with store.connect() as conn:
            attempt = conn.execute(q.last_attempt, {"source": source}).fetchone()
            unenriched, bearing = one_row(conn.execute(q.unenriched_documents, {"source": source}))
        passed, facts = refresh_verdict(attempt, int(unenriched), int(bearing))
        return dg.AssetCheckResult(passed=passed, metadata=facts)

    return _check


def build_embedding_checks(source: str) -> list[dg.AssetChecksDefinition]:
    """Coverage (every chunk has a vector of the configured model) and vector dimensions."""
    key = embeddings_key(source)

    @dg.asset_check(
        asset=key,
        name=COVERAGE,
        description="Every chunk of the published version has a vector for the configured model "
        "(which is the served model once a switch completes).",
    )
    def _coverage(store: StoreResource, embedder: EmbedderResource) -> dg.AssetCheckResult:
        q = Queries(store.sql_path(), "pipeline")
        with store.connect() as conn:
            active = (conn.execute(q.active_model).fetchone() or [None])[0]
            chunks, missing = one_row(
                conn.execute(q.source_chunk_coverage, {"source": source, "model": embedder.model})
            )
            facts: dict[str, Any] = {
                "model": embedder.model,
                "active_model": active or "",
                "chunks": chunks,
                "missing": missing,
            }
            if active and active != embedder.model:
                facts["missing_for_active_model"] = one_row(
                    conn.execute(q.source_chunk_coverage, {"source": source, "model": active})
                )[1]
        return dg.AssetCheckResult(passed=missing == 0, metadata=facts)

    @dg.asset_check(
        asset=key,
        name=DIMENSIONS,
        description="Every vector of the source has the dimension the model registry declares.",
    )
    def _dimensions(store: StoreResource, embedder: EmbedderResource) -> dg.AssetCheckResult:
        q = Queries(store.sql_path(), "pipeline")
        dims = embedder.dimensions()
        with store.connect() as conn:
            wrong = one_row(
                conn.execute(q.source_wrong_dimensions, {"source": source, "model": embedder.model, "dimensions": dims})
            )[0]
        return dg.AssetCheckResult(
            passed=wrong == 0,
            metadata={"model": embedder.model, "dimensions": dims, "wrong_dimension_vectors": wrong},
        )

    return [_coverage, _dimensions]
