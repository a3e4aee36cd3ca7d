"""Sensors: one per online source (cursor = what its last probe saw) and one per user folder.

A probe error is recorded as a failed attempt and propagates: Dagster shows a failed tick, never a silent
skip, and the next probe (a poll interval later, or on a poke) tries again. Only a rate limit reached is a skip,
saying until when. Between probes a tick is one database read: has a webhook poked the source (pipeline/pokes.py)?
"""

import json
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import psycopg

from secrag.db.queries import Queries
from secrag.errors import FetchRateLimited

from .assets.keys import FRESHNESS, LOOKUP_KEY, LOOKUP_SOURCES, embeddings_key, folder_key, source_key, upstream_key
from .assets.sources import REQUESTED_VERSION_TAG
from .assets.upstream import observation
from .checks import freshness_evaluation, freshness_verdict
from .folders import FileEntry, FolderScan, FolderSpec, scan_folder
from .pokes import POKE_TICK_SECONDS, Tick, mark_seen, read_tick
from .probe_cursor import decode_cursor, encode_cursor, rate_limited
from .refresh_inputs import source_row
from .resources import StoreResource, UpstreamResource
from .sources.interface import UpstreamVersion
from .sources.registry import SourceSpec
from .store import Store

FOLDER_INTERVAL = 60  # seconds between folder scans
log = logging.getLogger(__name__)


def source_targets(source: str) -> list[dg.AssetKey]:
    """What one upstream change re-materializes (an ATT&CK domain's techniques also refresh the technique lookup)."""
    keys = [source_key(source), embeddings_key(source)]
    return keys + [LOOKUP_KEY] if source in LOOKUP_SOURCES else keys


def refresh_request(spec: SourceSpec, seen: UpstreamVersion) -> dg.RunRequest:
    """A run publishing (and embedding) exactly the version the probe saw, at once: it need not wait for the
    automation sensor's next tick."""
    return dg.RunRequest(
        run_key=f"{spec.name}@{seen.version}@{seen.checked_at.isoformat()}",
        asset_selection=source_targets(spec.name),
        tags={"secrag/source": spec.name, REQUESTED_VERSION_TAG: seen.version},
    )


def freshness_change(
    context: dg.SensorEvaluationContext, spec: SourceSpec, state: tuple[Any, ...] | None
) -> dg.AssetCheckEvaluation | None:
    """The freshness check's evaluation when it differs from the last one Dagster recorded (else None)."""
    passed, facts = freshness_verdict(state, spec.poll_interval, datetime.now(UTC))
    last = context.instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(source_key(spec.name), FRESHNESS))
    evaluation = last.event.asset_check_evaluation if last and last.event else None
    if evaluation is not None and evaluation.passed == passed:
        return None
    return freshness_evaluation(spec.name, passed, facts)


def _state(conn: psycopg.Connection, queries: Queries, spec: SourceSpec) -> tuple[Any, ...] | None:
    return conn.execute(queries.source_state, {"source": spec.name}).fetchone()


def _seen(conn: psycopg.Connection, queries: Queries, source: str, ticked: Tick) -> None:
    if ticked.poke is not None:
        mark_seen(conn, queries, source, ticked.poke)


def _record_failure(db: Store, conn: psycopg.Connection, source: str, error: BaseException) -> None:
    try:
        db.record_probe_failure(conn, source, error)
    except Exception as exc:  # noqa: BLE001 - the probe's own error is the one the tick shows
        log.error("could not record a failed probe", extra={"source": source, "error": type(exc).__name__})


def build_source_sensor(spec: SourceSpec) -> dg.SensorDefinition:
    """Probe the upstream every poll interval, or on the next tick after a poke (pipeline/pokes.py), conditionally
    where it can; observe a new version and request its refresh, and report the source's freshness check whenever
    its verdict changes."""

    @dg.sensor(
        name=f"{spec.name}_upstream",
        minimum_interval_seconds=min(POKE_TICK_SECONDS, spec.poll_interval),
        default_status=dg.DefaultSensorStatus.RUNNING,
        asset_selection=source_targets(spec.name),
        description=f"Probes {spec.name} ({spec.tracking}) every {spec.poll_interval}s, or on the next "
        f"{POKE_TICK_SECONDS}s tick after a webhook poked it (secrag hooks), and records a new version "
        f"on {upstream_key(spec.name).to_user_string()}; once the source is published, a new version is "
        f"refreshed at once ({', '.join(k.to_user_string() for k in source_targets(spec.name))}), a first build "
        f"by the automation sensor. Reports the freshness check of {source_key(spec.name).to_user_string()} "
        "when it changes.",
    )
    def _sensor(
        context: dg.SensorEvaluationContext, upstream: UpstreamResource, store: StoreResource
    ) -> dg.SensorResult:
        known = decode_cursor(spec.name, context.cursor)
        wait = known.rate.wait() if known and known.rate else 0.0
        if known and wait:
            reset = datetime.fromtimestamp(time.time() + wait, UTC).isoformat(timespec="seconds")
            return dg.SensorResult(
                skip_reason=f"{spec.name}: the API's rate limit is down to its reserve; next probe after {reset}"
            )
        db, queries = store.store(), Queries(store.sql_path(), "pipeline")
        poke_queries = Queries(store.sql_path(), "pokes")
        with store.connect() as conn:
            ticked = read_tick(conn, poke_queries, spec)
            why = ticked.due(spec.poll_interval, datetime.now(UTC), first=context.last_tick_completion_time is None)
            if why is None:
                return dg.SensorResult(
                    skip_reason=f"{spec.name}: not poked, next probe {spec.poll_interval}s after the last"
                )
            db.register_source(conn, source_row(spec))
            try:
                seen = upstream.upstream().probe(spec, known=known)
            except FetchRateLimited as exc:
                _seen(conn, poke_queries, spec.name, ticked)
                _record_failure(db, conn, spec.name, exc)
                verdict = freshness_change(context, spec, _state(conn, queries, spec))
                cursor = encode_cursor(rate_limited(known, spec.name, exc.reset_at))
                return dg.SensorResult(
                    skip_reason=f"{spec.name}: {exc}", cursor=cursor, asset_events=[verdict] if verdict else []
                )
            except Exception as exc:
                _seen(conn, poke_queries, spec.name, ticked)
                _record_failure(db, conn, spec.name, exc)
                changed = freshness_change(context, spec, _state(conn, queries, spec))
                if changed is not None:
                    context.instance.report_runless_asset_event(changed)
                raise
            _seen(conn, poke_queries, spec.name, ticked)
            db.record_check(conn, spec.name, seen.version)
            db.record_probe_recovery(conn, spec.name, seen.version)
            state = _state(conn, queries, spec)
        verdict = freshness_change(context, spec, state)
        events: list[dg.AssetObservation | dg.AssetCheckEvaluation] = [verdict] if verdict else []
        cursor = encode_cursor(seen)
        if known is not None and known.version == seen.version:
            how = "304 Not Modified" if seen.not_modified else "same version"
            return dg.SensorResult(
                skip_reason=f"{spec.name} unchanged at {seen.version} ({how})", cursor=cursor, asset_events=events
            )
        context.log.info(
            f"{spec.name} ({why}): upstream moved from {known.version if known else 'nothing'} to {seen.version}"
        )
        # A source published before is refreshed at once; a first build is the automation's (ATT&CK's lookup first).
        published = state[0] if state else None
        runs = [refresh_request(spec, seen)] if published and published != seen.version else []
        return dg.SensorResult(run_requests=runs, cursor=cursor, asset_events=[observation(seen), *events])

    return _sensor


def encode_folder_cursor(seq: int, scan: FolderScan) -> str:
    files = {rel: [e.size, e.mtime_ns, e.sha256] for rel, e in sorted(scan.files.items())}
    return json.dumps({"seq": seq, "digest": scan.digest(), "files": files}, separators=(",", ":"))


def decode_folder_cursor(cursor: str | None) -> tuple[int, str, dict[str, FileEntry]]:
    if not cursor:
        return 0, "", {}
    raw = json.loads(cursor)
    files = {rel: FileEntry(int(v[0]), int(v[1]), str(v[2])) for rel, v in raw.get("files", {}).items()}
    return int(raw.get("seq", 0)), str(raw.get("digest", "")), files


def folder_changes(before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]) -> dict[str, list[str]]:
    """New, changed (by content hash) and deleted files."""
    return {
        "new": sorted(set(after) - set(before)),
        "deleted": sorted(set(before) - set(after)),
        "changed": sorted(r for r in set(before) & set(after) if before[r].sha256 != after[r].sha256),
    }


def build_folder_sensor(spec: FolderSpec) -> dg.SensorDefinition:
    """Scan the folder every minute; new, changed or deleted files (by content hash) launch one run."""
    targets = [folder_key(spec.name), embeddings_key(spec.name)]

    @dg.sensor(
        name=f"{spec.name}_folder",
        minimum_interval_seconds=FOLDER_INTERVAL,
        default_status=dg.DefaultSensorStatus.RUNNING,
        asset_selection=targets,
        description=f"Watches {spec.path} for new, changed and deleted files (content hash).",
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        seq, digest, before = decode_folder_cursor(context.cursor)
        scan = scan_folder(spec, before)
        if scan.digest() == digest:
            return dg.SensorResult(skip_reason=f"{spec.name}: no change", cursor=encode_folder_cursor(seq, scan))
        changes = folder_changes(before, scan.files)
        context.log.info(f"{spec.name}: " + ", ".join(f"{len(v)} {k}" for k, v in changes.items()))
        # The sequence number keeps a revert to an earlier state from reusing an old run key.
        request = dg.RunRequest(
            run_key=f"{spec.name}@{seq + 1}:{scan.digest()[:16]}",
            asset_selection=targets,
            tags={
                "secrag/source": spec.name,
                **{f"secrag/files_{k}": str(len(v)) for k, v in changes.items()},
            },
        )
        return dg.SensorResult(run_requests=[request], cursor=encode_folder_cursor(seq + 1, scan))

    return _sensor
