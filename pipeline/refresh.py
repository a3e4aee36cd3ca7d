"""Refresh one online source, without Dagster: probe, fetch, parse and publish, every attempt recorded.

`refresh_source` is what the `sources/<source>` asset runs; the asset only turns its result into
metadata and check results. Whatever phase fails, the attempt leaves a `source_versions` row
(status, phase, error class, reason), the source's state and last error say so, and the version
published before stays served. A `running` row whose process died is marked `abandoned` by the
next attempt.
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psycopg

from secrag.errors import ParseError, SecragError
from secrag.queries import Queries

from .chunking import ChunkConfig
from .refresh_inputs import ATTACK_SOURCE, enrichment_lookup, pinned_version, publish_fingerprint, source_row
from .sources.interface import FetchResult, Upstream, UpstreamVersion
from .sources.parsing import parse_source
from .sources.records import ParseOutcome
from .sources.registry import SourceSpec
from .store import PublishResult, Store

log = logging.getLogger(__name__)

Phase = Literal["probe", "fetch", "parse", "publish"]


class RefreshFailed(SecragError):
    """An attempt that failed in `phase`; it is recorded, and the previous version stays served."""

    def __init__(self, source: str, phase: Phase, version: str | None, cause: BaseException) -> None:
        at = f"@{version}" if version else ""
        super().__init__(f"{source}{at}: {phase} failed: {cause}; the previous version stays served")
        self.source, self.phase, self.version, self.cause = source, phase, version, cause

    @property
    def empty(self) -> bool:
        """Whether the upstream version held nothing to parse (the non-empty check fails)."""
        return isinstance(self.cause, ParseError) and (
            "nothing parsed" in str(self.cause) or "no files match" in str(self.cause)
        )


@dataclass(frozen=True)
class RefreshLimits:
    """How a refresh chunks, and what it refuses."""

    chunking: ChunkConfig
    max_shrink: float
    max_error_share: float
    work_dir: Path


@dataclass(frozen=True)
class Refreshed:
    """What a refresh did: `unchanged` (nothing to do), `published` or `refused`."""

    status: Literal["unchanged", "published", "refused"]
    version: str
    fingerprint: str
    previous_records: int
    records: int
    fetched: FetchResult | None = None
    outcome: ParseOutcome | None = None
    result: PublishResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # per phase
    elapsed: float = 0.0  # the whole refresh


@dataclass
class _Attempt:
    """One refresh in progress: its inputs, and the timings and facts it gathers."""

    spec: SourceSpec
    upstream: Upstream
    conn: psycopg.Connection
    store: Store
    queries: Queries
    limits: RefreshLimits
    pin: str | None
    force: bool
    started: float = field(default_factory=time.monotonic)
    seconds: dict[str, float] = field(default_factory=dict)

    def fail(self, phase: Phase, version: str | None, error: BaseException) -> RefreshFailed:
        """Record a failure that has no running row yet (probe, fetch) and return the error to raise."""
        self.store.record_failure(self.conn, self.spec.name, version, phase, error)
        return RefreshFailed(self.spec.name, phase, version, error)

    def probe(self) -> UpstreamVersion:
        if self.pin:
            return pinned_version(self.spec, self.pin)
        try:
            seen = self.upstream.probe(self.spec)
        except SecragError as exc:
            self.store.record_check(self.conn, self.spec.name, None, str(exc))
            raise self.fail("probe", None, exc) from exc
        self.store.record_check(self.conn, self.spec.name, seen.version)
        return seen

    def unchanged(self, version: str, fingerprint: str) -> Refreshed | None:
        """The served version when it was built from exactly these inputs (nothing to do)."""
        last = self.conn.execute(self.queries.last_published_fingerprint, {"source": self.spec.name}).fetchone()
        if self.force or last is None or last[0] != fingerprint:
            return None
        row = self.conn.execute(self.queries.mark_unchanged, {"source": self.spec.name, "version": version}).fetchone()
        if row is None:
            return None
        records = int(row[0])
        elapsed = time.monotonic() - self.started
        return Refreshed("unchanged", version, fingerprint, records, records, seconds=self.seconds, elapsed=elapsed)

    def parse(self, seen: UpstreamVersion, checkout: Path) -> tuple[FetchResult, ParseOutcome, int]:
        """Fetch and parse the version; (fetched, outcome, running version row id)."""
        mark = time.monotonic()
        try:
            fetched = self.upstream.fetch(self.spec, seen, checkout, pin=self.pin)
        except SecragError as exc:
            raise self.fail("fetch", seen.version, exc) from exc
        self.seconds["fetch"] = time.monotonic() - mark
        log.info("fetched", extra={"source": self.spec.name, "version": fetched.version})
        version_id = self.store.begin_version(self.conn, self.spec.name, fetched.version, "parse")
        mark = time.monotonic()
        try:
            outcome = parse_source(
                self.spec, fetched.root, version=fetched.version, max_error_share=self.limits.max_error_share
            )
        except ParseError as exc:
            self.store.fail_version(
                self.conn, version_id, self.spec.name, str(exc), phase="parse", error_class=type(exc).__name__
            )
            raise RefreshFailed(self.spec.name, "parse", fetched.version, exc) from exc
        self.seconds["parse"] = time.monotonic() - mark
        return fetched, outcome, version_id


def refresh_source(
    spec: SourceSpec,
    upstream: Upstream,
    conn: psycopg.Connection,
    store: Store,
    queries: Queries,
    limits: RefreshLimits,
    *,
    pin: str | None = None,
    force: bool = False,
) -> Refreshed:
    """Bring the source to its newest upstream version (or to `pin`); RefreshFailed after recording a failure.

    `conn` is an autocommit connection; `queries` are the pipeline's named queries.
    """
    attempt = _Attempt(spec, upstream, conn, store, queries, limits, pin, force)
    for source, row_id in store.abandon_dead_attempts(conn):
        log.warning("abandoned a dead attempt", extra={"source": source, "source_version_id": row_id})
    store.register_source(conn, source_row(spec))
    seen = attempt.probe()
    attempt.seconds["probe"] = time.monotonic() - attempt.started
    published = store.technique_names(conn)
    own = None if spec.name == ATTACK_SOURCE else published
    chunking = limits.chunking.with_overrides(spec.chunking)
    fingerprint = publish_fingerprint(spec, seen.version, chunking.version, own)
    done = attempt.unchanged(seen.version, fingerprint)
    if done is not None:
        return done
    with tempfile.TemporaryDirectory(prefix=f"{spec.name}-", dir=limits.work_dir) as tmp:
        fetched, outcome, version_id = attempt.parse(seen, Path(tmp) / "checkout")
        lookup = enrichment_lookup(spec, fetched.root, published)
    if fetched.version != seen.version:  # a feed that moved on since the probe
        fingerprint = publish_fingerprint(spec, fetched.version, chunking.version, own)
    previous = store.served_records(conn, spec.name)
    try:
        result = store.publish(
            conn,
            source=spec.name,
            version=fetched.version,
            records=outcome.records,
            skipped=outcome.skipped,
            lookup=lookup,
            chunking=chunking,
            max_shrink=limits.max_shrink,
            force=force,
            version_id=version_id,
            details={
                "commit": fetched.commit,
                "pin": pin,
                "parser_version": spec.parser_version,
                "files_seen": outcome.files_seen,
                "fingerprint": fingerprint,
            },
        )
    except (psycopg.Error, SecragError) as exc:
        store.fail_version(conn, version_id, spec.name, str(exc), phase="publish", error_class=type(exc).__name__)
        raise RefreshFailed(spec.name, "publish", fetched.version, exc) from exc
    attempt.seconds["publish"] = result.seconds
    status: Literal["published", "refused"] = "refused" if result.status == "refused" else "published"
    elapsed = time.monotonic() - attempt.started
    return Refreshed(
        status,
        fetched.version,
        fingerprint,
        previous,
        result.parsed,
        fetched,
        outcome,
        result,
        attempt.seconds,
        elapsed,
    )
