"""`sources/<source>`: fetch the upstream version, parse it, publish it atomically into the store."""

import hashlib
import json
import tempfile
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from secrag.errors import ParseError
from secrag.queries import Queries, one_row

from ..resources import StoreResource, UpstreamResource
from ..sources.interface import FetchResult, UpstreamVersion
from ..sources.mitre_lookup import techniques_from_bundle
from ..sources.parsing import parse_source
from ..sources.registry import SourceSpec
from ..store import SourceRow
from .keys import ATTACK_SOURCE, LOOKUP_KEY, NO_SHRINK, NON_EMPTY, source_key, upstream_key
from .publishing import publish_check_specs, publish_checks, publish_metadata


class SourceConfig(dg.Config):
    """Run config of a source publish (backfills): pin an older version, or force a refused one."""

    pin: str | None = Field(
        default=None,
        description="Commit SHA or release tag to publish instead of the latest upstream version (not for feeds).",
    )
    force: bool = Field(
        default=False, description="Publish even if the version is empty or shrank by more than max_shrink."
    )


def source_row(spec: SourceSpec) -> SourceRow:
    return SourceRow(
        name=spec.name,
        kind="online",
        description=spec.description,
        category=spec.category,
        upstream=spec.repo or spec.feed_url or None,
        branch=spec.branch,
        tracking=spec.tracking,
    )


def version_url(spec: SourceSpec, fetched: FetchResult) -> str:
    """Where a person can look at exactly the published upstream version."""
    if spec.github and fetched.commit:
        return f"https://github.com/{spec.github}/tree/{fetched.commit}"
    return spec.feed_url or spec.repo


REQUESTED_VERSION_TAG = "secrag/upstream_version"


def pinned_version(spec: SourceSpec, pin: str) -> UpstreamVersion:
    """A stand-in probe result for a pinned fetch (the fetcher resolves the pin itself)."""
    return UpstreamVersion(
        source=spec.name,
        tracking=spec.tracking,
        version=pin,
        commit=None,
        url=spec.repo,
        checked_at=datetime.now(UTC),
    )


def enrichment_lookup(spec: SourceSpec, root: Path, published: Mapping[str, str]) -> Mapping[str, str]:
    """Technique names used to enrich chunks.

    ATT&CK is enriched from its own bundle, so its chunks are the same on a first build (empty
    lookup table) as on any refresh; every other source uses the published lookup table, which
    the graph builds before them.
    """
    if spec.name != ATTACK_SOURCE:
        return published
    bundle = root / spec.paths[0]
    return {t.id: t.full_name for t in techniques_from_bundle(bundle) if t.active}


def publish_fingerprint(spec: SourceSpec, version: str, chunker: str, lookup: Mapping[str, str] | None) -> str:
    """What a published version was built from: upstream version, parser, chunker and ATT&CK names.

    ATT&CK enriches from its own bundle, so its version already covers its lookup (`lookup` None).
    """
    names = (
        "own-bundle"
        if lookup is None
        else hashlib.sha256(json.dumps(sorted(lookup.items()), separators=(",", ":")).encode()).hexdigest()
    )
    return hashlib.sha256(json.dumps([version, spec.parser_version, chunker, names]).encode()).hexdigest()


def _unchanged(
    spec: SourceSpec, version: str, fingerprint: str, started: float, checks_facts: Mapping[str, Any]
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    """A refresh that found nothing to do: the served version already is exactly this one."""
    for name in (NON_EMPTY, NO_SHRINK):
        yield dg.AssetCheckResult(check_name=name, passed=True, metadata={**checks_facts, "unchanged": True})
    yield dg.MaterializeResult(
        data_version=dg.DataVersion(version),
        metadata={
            "version": version,
            "status": "unchanged",
            "records": checks_facts["records"],
            "inserted": 0,
            "updated": 0,
            "deleted": 0,
            "unchanged": checks_facts["records"],
            "chunks_written": 0,
            "fingerprint": fingerprint[:16],
            "seconds": round(time.monotonic() - started, 3),
        },
    )


def build_source_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    """The publishing asset of one online source."""
    key = source_key(spec.name)
    deps = [upstream_key(spec.name)] + ([] if spec.name == ATTACK_SOURCE else [LOOKUP_KEY])

    @dg.asset(
        key=key,
        deps=deps,
        group_name=spec.category,
        code_version=spec.parser_version,
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
        source = upstream.upstream()
        db = store.store()
        q = Queries(store.sql_path(), "pipeline")
        timings: dict[str, float] = {}
        started = time.monotonic()
        # A sensor run publishes exactly the version its tick saw (feeds keep no history: re-probe).
        requested = context.run.tags.get(REQUESTED_VERSION_TAG) if spec.tracking != "feed" else None
        pin = config.pin or requested
        with store.connect() as conn:
            db.register_source(conn, source_row(spec))
            if pin:
                seen = pinned_version(spec, pin)
            else:
                seen = source.probe(spec)
                db.record_check(conn, spec.name, seen.version)
            timings["probe"] = time.monotonic() - started
            published = db.technique_names(conn)
            own = None if spec.name == ATTACK_SOURCE else published
            fingerprint = publish_fingerprint(spec, seen.version, store.chunking().version, own)
            last = conn.execute(q.last_published_fingerprint, {"source": spec.name}).fetchone()
            if not config.force and last is not None and last[0] == fingerprint:
                row = conn.execute(q.mark_unchanged, {"source": spec.name, "version": seen.version}).fetchone()
                if row is not None:
                    context.log.info(
                        f"{spec.name}@{seen.version}: already published from the same parser, "
                        "chunker and ATT&CK names; nothing to do"
                    )
                    yield from _unchanged(
                        spec,
                        seen.version,
                        fingerprint,
                        started,
                        {"records": int(row[0]), "previous_records": int(row[0])},
                    )
                    return
            with tempfile.TemporaryDirectory(prefix=f"{spec.name}-", dir=store.work_path()) as tmp:
                mark = time.monotonic()
                fetched = source.fetch(spec, seen, Path(tmp) / "checkout", pin=pin)
                timings["fetch"] = time.monotonic() - mark
                context.log.info(f"{spec.name}: fetched {fetched.version} in {timings['fetch']:.1f}s")
                version_id = db.begin_version(conn, spec.name, fetched.version)
                mark = time.monotonic()
                try:
                    outcome = parse_source(
                        spec, fetched.root, version=fetched.version, max_error_share=store.error_share_limit()
                    )
                except ParseError as exc:
                    db.fail_version(conn, version_id, spec.name, str(exc))
                    if "nothing parsed" in str(exc) or "no files match" in str(exc):
                        yield dg.AssetCheckResult(
                            check_name=NON_EMPTY,
                            passed=False,
                            metadata={"reason": str(exc), "version": fetched.version},
                        )
                    raise dg.Failure(
                        f"{spec.name}@{fetched.version}: {exc}; the previous version stays served",
                        metadata={"version": fetched.version},
                    ) from exc
                timings["parse"] = time.monotonic() - mark
                lookup = enrichment_lookup(spec, fetched.root, published)
            previous = int(one_row(conn.execute(q.source_state, {"source": spec.name}))[5])
            result = db.publish(
                conn,
                source=spec.name,
                version=fetched.version,
                records=outcome.records,
                skipped=outcome.skipped,
                lookup=lookup,
                chunking=store.chunking(),
                max_shrink=store.shrink_limit(),
                force=config.force,
                version_id=version_id,
                details={
                    "commit": fetched.commit,
                    "pin": config.pin,
                    "parser_version": spec.parser_version,
                    "files_seen": outcome.files_seen,
                    "fingerprint": fingerprint
                    if fetched.version == seen.version
                    else publish_fingerprint(spec, fetched.version, store.chunking().version, own),
                },
            )
        timings["publish"] = result.seconds
        checks = publish_checks(result, previous=previous, max_shrink=store.shrink_limit(), forced=config.force)
        if result.status == "refused":
            yield from checks
            raise dg.Failure(
                f"{spec.name}@{fetched.version} refused: {result.reason}; the previous version "
                "stays served (rerun with config force: true to accept it)",
                metadata={"version": fetched.version, "records": result.parsed, "previous_records": previous},
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
                "pinned": bool(config.pin),
                "files_seen": outcome.files_seen,
                "with_techniques": outcome.with_techniques,
                **publish_metadata(result),
                **{f"seconds_{phase}": round(s, 3) for phase, s in timings.items()},
                "seconds": round(time.monotonic() - started, 3),
            },
        )

    return _publish
