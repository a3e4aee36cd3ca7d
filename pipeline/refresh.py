"""Refresh one online source, without Dagster: probe, fetch, parse and publish, every attempt recorded.

`refresh_source` is what the `sources/<source>` asset runs; the asset only turns its result into
metadata and check results. Every attempt leaves a `source_versions` row: `unchanged` when the
served version was built from the same inputs, `published` or `refused`, and `failed` (with its
phase, public error kind, error class and full text) for any exception in any phase, ours or not,
recorded before it propagates. The source's state is derived from those rows, and the version
published before a failure stays served. A `running` row whose process died is marked `abandoned`
by the next attempt.
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psycopg

from secrag.db.queries import Queries
from secrag.error_kinds import kind_of
from secrag.errors import SecragError

from .chunking import ChunkConfig
from .refresh_inputs import LOOKUP_SOURCES, enrichment_lookup, pinned_version, publish_fingerprint, source_row
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
        self.kind = kind_of(cause, phase)

    @property
    def empty(self) -> bool:
        """Whether the upstream version held nothing to parse (the non-empty check fails)."""
        return self.kind == "empty"


@dataclass(frozen=True)
class RefreshLimits:
    """How a refresh chunks, and what it refuses."""

    chunking: ChunkConfig
    max_shrink: float
    max_error_share: float
    work_dir: Path
    history_days: int | None = None  # change history and `unchanged` attempts kept; None: all


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
    """One refresh in progress: its inputs, where it is, and the timings it gathers."""

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
    phase: Phase = "probe"
    version: str | None = None  # once probed
    version_id: int | None = None  # once a running row exists

    def record(self, error: BaseException) -> None:
        """Record the failure on the attempt's row (or a new failed row) before it propagates.

        A recording that itself fails (the database went away) is logged; the original error is what
        the caller sees either way."""
        kind = kind_of(error, self.phase)
        try:
            if self.version_id is not None:
                self.store.fail_version(self.conn, self.version_id, error, phase=self.phase, kind=kind)
            else:
                self.store.record_failure(self.conn, self.spec.name, self.version, self.phase, error, kind)
        except Exception as exc:  # noqa: BLE001 - the refresh's own error is the one to raise
            log.error(
                "could not record a failed attempt",
                extra={"source": self.spec.name, "phase": self.phase, "error": type(exc).__name__},
            )

    def probe(self) -> UpstreamVersion:
        if self.pin:
            seen = pinned_version(self.spec, self.pin)
        else:
            seen = self.upstream.probe(self.spec)  # a failure is recorded as the attempt's
            self.store.record_check(self.conn, self.spec.name, seen.version)
        self.version = seen.version
        return seen

    def unchanged(self, version: str, fingerprint: str) -> Refreshed | None:
        """The served version when it was built from exactly these inputs (nothing to do); recorded."""
        last = self.conn.execute(self.queries.last_published_fingerprint, {"source": self.spec.name}).fetchone()
        if self.force or last is None or last[0] != fingerprint:
            return None
        records = self.store.record_unchanged(self.conn, self.spec.name, version)
        if records is None:
            return None
        elapsed = time.monotonic() - self.started
        return Refreshed("unchanged", version, fingerprint, records, records, seconds=self.seconds, elapsed=elapsed)

    def parse(self, seen: UpstreamVersion, checkout: Path) -> tuple[FetchResult, ParseOutcome]:
        """Fetch and parse the version (a running version row exists from the parse on)."""
        mark = time.monotonic()
        self.phase = "fetch"
        fetched = self.upstream.fetch(self.spec, seen, checkout, pin=self.pin)
        self.seconds["fetch"] = time.monotonic() - mark
        log.info("fetched", extra={"source": self.spec.name, "version": fetched.version})
        self.phase, self.version = "parse", fetched.version
        self.version_id = self.store.begin_version(self.conn, self.spec.name, fetched.version, "parse")
        mark = time.monotonic()
        outcome = parse_source(
            self.spec, fetched.root, version=fetched.version, max_error_share=self.limits.max_error_share
        )
        self.seconds["parse"] = time.monotonic() - mark
        return fetched, outcome


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
    if limits.history_days is not None:
        changes, attempts = store.prune_history(conn, limits.history_days)
        if changes or attempts:
            log.info("pruned history", extra={"changes": changes, "unchanged_attempts": attempts})
    store.register_source(conn, source_row(spec))
    try:
        return _refresh(attempt)
    except BaseException as exc:
        attempt.record(exc)
        if isinstance(exc, SecragError | psycopg.Error):
            raise RefreshFailed(spec.name, attempt.phase, attempt.version, exc) from exc
        raise  # not ours (a bug, an interrupt): recorded as failed, and raised as it was


def _refresh(attempt: _Attempt) -> Refreshed:
    """The attempt's phases; any exception propagates to refresh_source, which records it."""
    spec, conn, store, limits = attempt.spec, attempt.conn, attempt.store, attempt.limits
    seen = attempt.probe()
    attempt.seconds["probe"] = time.monotonic() - attempt.started
    published = store.technique_names(conn)
    own = None if spec.name in LOOKUP_SOURCES else published
    chunking = limits.chunking.with_overrides(spec.chunking)
    fingerprint = publish_fingerprint(spec, seen.version, chunking.version, own)
    done = attempt.unchanged(seen.version, fingerprint)
    if done is not None:
        return done
    with tempfile.TemporaryDirectory(prefix=f"{spec.name}-", dir=limits.work_dir) as tmp:
        fetched, outcome = attempt.parse(seen, Path(tmp) / "checkout")
        lookup = enrichment_lookup(spec, fetched.root, published)
    if fetched.version != seen.version:  # a feed that moved on since the probe
        fingerprint = publish_fingerprint(spec, fetched.version, chunking.version, own)
    attempt.phase = "publish"
    previous = store.served_records(conn, spec.name)
    assert attempt.version_id is not None
    result = store.publish(
        conn,
        source=spec.name,
        version=fetched.version,
        records=outcome.records,
        skipped=outcome.skipped,
        lookup=lookup,
        chunking=chunking,
        max_shrink=spec.max_shrink(limits.max_shrink),
        shape=spec.shape,
        force=attempt.force,
        version_id=attempt.version_id,
        details={
            "commit": fetched.commit,
            "pin": attempt.pin,
            "parser_version": spec.parser_version,
            "files_seen": outcome.files_seen,
            "fingerprint": fingerprint,
        },
    )
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
