"""Sensors: one per online source (cursor = last upstream version seen) and one per user folder.

A probe or scan error propagates: Dagster shows a failed tick, never a silent skip.
"""

import json
from collections.abc import Mapping

import dagster as dg

from .assets.keys import ATTACK_SOURCE, LOOKUP_KEY, embeddings_key, folder_key, source_key, upstream_key
from .assets.upstream import observation
from .folders import FileEntry, FolderScan, FolderSpec, scan_folder
from .refresh_inputs import source_row
from .resources import StoreResource, UpstreamResource
from .sources.registry import SourceSpec

FOLDER_INTERVAL = 60  # seconds between folder scans


def source_targets(source: str) -> list[dg.AssetKey]:
    """What one upstream change re-materializes (ATT&CK also refreshes the technique lookup)."""
    keys = [source_key(source), embeddings_key(source)]
    return keys + [LOOKUP_KEY] if source == ATTACK_SOURCE else keys


def build_source_sensor(spec: SourceSpec) -> dg.SensorDefinition:
    """Probe the upstream every poll interval and observe its version; automation does the rest."""

    @dg.sensor(
        name=f"{spec.name}_upstream",
        minimum_interval_seconds=spec.poll_interval,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Probes {spec.name} ({spec.tracking}) every {spec.poll_interval}s and records the version "
        f"on {upstream_key(spec.name).to_user_string()}; a new one makes the automation sensor refresh "
        f"{', '.join(k.to_user_string() for k in source_targets(spec.name))}.",
    )
    def _sensor(
        context: dg.SensorEvaluationContext, upstream: UpstreamResource, store: StoreResource
    ) -> dg.SensorResult:
        seen = upstream.upstream().probe(spec)
        with store.connect() as conn:
            db = store.store()
            db.register_source(conn, source_row(spec))
            db.record_check(conn, spec.name, seen.version)
        events = [observation(seen)]
        if context.cursor == seen.version:
            return dg.SensorResult(skip_reason=f"{spec.name} unchanged at {seen.version}", asset_events=events)
        context.log.info(f"{spec.name}: upstream moved from {context.cursor or 'nothing'} to {seen.version}")
        return dg.SensorResult(cursor=seen.version, asset_events=events)

    return _sensor


def encode_cursor(seq: int, scan: FolderScan) -> str:
    files = {rel: [e.size, e.mtime_ns, e.sha256] for rel, e in sorted(scan.files.items())}
    return json.dumps({"seq": seq, "digest": scan.digest(), "files": files}, separators=(",", ":"))


def decode_cursor(cursor: str | None) -> tuple[int, str, dict[str, FileEntry]]:
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
        seq, digest, before = decode_cursor(context.cursor)
        scan = scan_folder(spec, before)
        if scan.digest() == digest:
            return dg.SensorResult(skip_reason=f"{spec.name}: no change", cursor=encode_cursor(seq, scan))
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
        return dg.SensorResult(run_requests=[request], cursor=encode_cursor(seq + 1, scan))

    return _sensor
