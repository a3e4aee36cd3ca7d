"""`sources/<source>`: fetch the upstream version, parse it, publish it atomically into the store."""

from collections.abc import Iterator
from typing import Any

import dagster as dg
from pydantic import Field

from secrag.db.queries import Queries

from ..automation import on_new_inputs
from ..refresh import Refreshed, RefreshFailed, RefreshLimits, refresh_source
from ..resources import StoreResource, UpstreamResource
from ..sources.interface import FetchResult
from ..sources.registry import SourceSpec
from .keys import LOOKUP_KEY, LOOKUP_SOURCES, NO_SHRINK, NON_EMPTY, OWNERS, source_key, upstream_key
from .publishing import publish_check_specs, publish_checks, publish_metadata
from .stages import published_stages


class SourceConfig(dg.Config):
    """Run config of a source publish (backfills): pin an older version, or force a refused one."""

    pin: str | None = Field(
        default=None,
        description="Commit SHA or release tag to publish instead of the latest upstream version (not for feeds).",
    )
    force: bool = Field(
        default=False,
        description="Publish even if the version is empty, shrank by more than max_shrink, or a kind of record "
        "shrank past its band.",
    )


def version_url(spec: SourceSpec, fetched: FetchResult) -> str:
    """Where a person can look at exactly the published upstream version."""
    if spec.github and fetched.commit:
        return f"https://github.com/{spec.github}/tree/{fetched.commit}"
    return spec.feed_url or spec.repo


REQUESTED_VERSION_TAG = "secrag/upstream_version"


def _unchanged(done: Refreshed) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    """A refresh that found nothing to do: the served version already is exactly this one."""
    facts = {"records": done.records, "previous_records": done.previous_records, "unchanged": True}
    for name in (NON_EMPTY, NO_SHRINK):
        yield dg.AssetCheckResult(check_name=name, passed=True, metadata=facts)
    yield dg.MaterializeResult(
        data_version=dg.DataVersion(done.version),
        metadata={
            "version": done.version,
            "status": "unchanged",
            "records": done.records,
            "dagster/row_count": done.records,
            "inserted": 0,
            "updated": 0,
            "deleted": 0,
            "added": 0,
            "modified": 0,
            "removed": 0,
            "unchanged": done.records,
            "chunks_written": 0,
            "fingerprint": done.fingerprint[:16],
            **{f"seconds_{phase}": round(s, 3) for phase, s in done.seconds.items()},
            "seconds": round(done.elapsed, 3),
        },
    )


def build_source_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    """The publishing asset of one online source."""
    key = source_key(spec.name)
    deps = [upstream_key(spec.name)] + ([] if spec.name in LOOKUP_SOURCES else [LOOKUP_KEY])

    @dg.asset(
        key=key,
        deps=deps,
        group_name=spec.category,
        code_version=spec.parser_version,
        automation_condition=on_new_inputs(),
        owners=OWNERS,
        kinds={"python", "postgres"},
        check_specs=publish_check_specs(key),
        description=f"{spec.description}. Fetch the upstream version, parse it with `{spec.parser}` "
        f"(v{spec.parser_version}) and publish it in one transaction; data version = the "
        "upstream version published.",
        metadata={"parser": spec.parser, "license": spec.license, "paths": ", ".join(spec.paths)},
        tags={"secrag/source": spec.name},
    )
    def _publish(
        context: dg.AssetExecutionContext,
        config: SourceConfig,
        upstream: UpstreamResource,
        store: StoreResource,
    ) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        # A sensor run publishes exactly the version its tick saw (feeds keep no history: re-probe).
        requested = context.run.tags.get(REQUESTED_VERSION_TAG) if spec.tracking != "feed" else None
        limits = RefreshLimits(
            store.chunking(), store.shrink_limit(), store.error_share_limit(), store.work_path(), store.history_days()
        )
        queries = Queries(store.sql_path(), "pipeline")
        with store.connect() as conn:
            try:
                done = refresh_source(
                    spec,
                    upstream.upstream(),
                    conn,
                    store.store(),
                    queries,
                    limits,
                    pin=config.pin or requested,
                    force=config.force,
                )
            except RefreshFailed as exc:
                if exc.empty:
                    yield dg.AssetCheckResult(
                        check_name=NON_EMPTY, passed=False, metadata={"reason": str(exc.cause), "version": exc.version}
                    )
                # The full text is the operators' (the run's event log); callers see only the kind.
                raise dg.Failure(
                    str(exc),
                    metadata={
                        "phase": exc.phase,
                        "error_kind": exc.kind,
                        "error_class": type(exc.cause).__name__,
                        "error_detail": str(exc.cause)[:4000],
                        "version": exc.version or "",
                    },
                ) from exc
            stages = published_stages(context, conn, queries, spec.name, done.version)
        if done.status == "unchanged":
            context.log.info(f"{spec.name}@{done.version}: already published from the same inputs; nothing to do")
            yield from _unchanged(done)
            return
        yield from _published(context, spec, config, done, spec.max_shrink(store.shrink_limit()), stages)

    return _publish


def _published(
    context: dg.AssetExecutionContext,
    spec: SourceSpec,
    config: SourceConfig,
    done: Refreshed,
    max_shrink: float,
    stages: dict[str, Any],
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    """Checks and metadata of a publish, or the failure of a refused one."""
    assert done.result is not None and done.fetched is not None and done.outcome is not None
    result, fetched = done.result, done.fetched
    checks = publish_checks(result, previous=done.previous_records, max_shrink=max_shrink, forced=config.force)
    if done.status == "refused":
        yield from checks
        raise dg.Failure(
            f"{spec.name}@{fetched.version} refused: {result.reason}; the previous version "
            "stays served (rerun with config force: true to accept it)",
            metadata={"version": fetched.version, "records": result.parsed, "previous_records": done.previous_records},
        )
    context.log.info(
        f"{spec.name}@{fetched.version}: {result.parsed} records "
        f"(+{result.inserted} ~{result.updated} -{result.deleted})"
    )
    yield dg.MaterializeResult(
        data_version=dg.DataVersion(fetched.version),
        check_results=checks,
        metadata={
            "version": fetched.version,
            "commit": fetched.commit or "",
            "url": dg.MetadataValue.url(version_url(spec, fetched)),
            "dagster/uri": version_url(spec, fetched),
            "dagster/row_count": result.parsed,
            "pinned": bool(config.pin),
            "files_seen": done.outcome.files_seen,
            "with_techniques": done.outcome.with_techniques,
            **publish_metadata(result),
            # What the parser found missing upstream (ATT&CK's fields that spec v4 removes), named, not dropped.
            **{name: dg.MetadataValue.json(list(names)) for name, names in done.outcome.notes.items()},
            **{f"seconds_{phase}": round(s, 3) for phase, s in done.seconds.items()},
            "seconds": round(done.elapsed, 3),
            **stages,
        },
    )
