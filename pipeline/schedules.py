"""Schedules: a nightly reconcile of anything stale, and an hourly run of the freshness checks."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import dagster as dg
from dagster._core.definitions.data_version import extract_data_version_from_entry

from .assets.keys import ATTACK_SOURCE, LOOKUP_KEY, embeddings_key, folder_key, source_key, upstream_key
from .folders import FolderSpec, scan_folder

NIGHTLY = "0 3 * * *"
HOURLY = "17 * * * *"


@dataclass(frozen=True)
class Expected:
    """What the code would produce now, per published asset: code version and (for folders) content."""

    publish_key: dg.AssetKey
    upstream_key: dg.AssetKey | None  # None for user folders
    publish_code: str
    embed_code: str


def _latest(instance: dg.DagsterInstance, key: dg.AssetKey, is_source: bool = False):  # noqa: ANN202
    return instance.get_latest_data_version_record(key, is_source=is_source)


def stale_selection(
    instance: dg.DagsterInstance, name: str, expected: Expected, folder_digest: str | None = None
) -> list[dg.AssetKey]:
    """The assets of one source that are stale: missing, code changed, or behind their input."""
    pub_key, emb_key = expected.publish_key, embeddings_key(name)
    codes = instance.get_latest_materialization_code_versions([pub_key, emb_key])
    published = _latest(instance, pub_key)
    stale_publish = published is None or codes.get(pub_key) != expected.publish_code
    if not stale_publish and published is not None:
        have = extract_data_version_from_entry(published.event_log_entry)
        if expected.upstream_key is not None:
            seen = _latest(instance, expected.upstream_key, is_source=True)
            want = extract_data_version_from_entry(seen.event_log_entry) if seen else None
        else:
            want = dg.DataVersion(folder_digest) if folder_digest else None
        stale_publish = want is not None and have != want
    if stale_publish:
        return [pub_key, emb_key]
    embedded = _latest(instance, emb_key)
    if (
        embedded is None
        or codes.get(emb_key) != expected.embed_code
        or (published is not None and embedded.storage_id < published.storage_id)
    ):
        return [emb_key]
    return []


def build_reconcile_schedule(
    expected: Mapping[str, Expected], folders: Iterable[FolderSpec], targets: dg.AssetSelection
) -> dg.ScheduleDefinition:
    """Every night, one run per source whose assets are stale (failed runs, parser or model changes)."""
    folder_specs = {f.name: f for f in folders}

    @dg.schedule(
        name="nightly_reconcile",
        cron_schedule=NIGHTLY,
        target=targets,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        execution_timezone="UTC",
        description="Re-materializes what is stale: never built, behind the last upstream version "
        "observed (e.g. a failed or refused run), or built by older code (parser "
        "version, embedding model, chunker).",
    )
    def nightly_reconcile(context: dg.ScheduleEvaluationContext):  # noqa: ANN202 - generator
        day = context.scheduled_execution_time.strftime("%Y-%m-%d")
        requested = 0
        for name, exp in sorted(expected.items()):
            digest = scan_folder(folder_specs[name]).digest() if name in folder_specs else None
            keys = stale_selection(context.instance, name, exp, digest)
            if name == ATTACK_SOURCE and source_key(name) in keys:
                keys.append(LOOKUP_KEY)
            if keys:
                requested += 1
                yield dg.RunRequest(
                    run_key=f"nightly:{day}:{name}",
                    asset_selection=keys,
                    tags={"secrag/source": name, "secrag/reason": "nightly reconcile"},
                )
        if not requested:
            yield dg.SkipReason("nothing stale")

    return nightly_reconcile


def build_freshness_schedule(check_keys: list[dg.AssetCheckKey]) -> dg.ScheduleDefinition:
    """Hourly evaluation of every source's freshness check (without materializing anything)."""
    job = dg.define_asset_job(
        "freshness_checks",
        selection=dg.AssetSelection.checks(*check_keys),
        description="Freshness check of every online source.",
    )
    return dg.ScheduleDefinition(
        name="hourly_freshness_checks",
        cron_schedule=HOURLY,
        job=job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        execution_timezone="UTC",
    )


def expected_for(source: str, *, publish_code: str, embed_code: str, folder: bool = False) -> Expected:
    return Expected(
        publish_key=folder_key(source) if folder else source_key(source),
        upstream_key=None if folder else upstream_key(source),
        publish_code=publish_code,
        embed_code=embed_code,
    )
