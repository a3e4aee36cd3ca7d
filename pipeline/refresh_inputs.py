"""What a refresh is built from, besides the upstream's files: the source's row, a pinned version's
stand-in probe, the technique names its chunks are enriched with, and the fingerprint that says
whether a published version must be rebuilt."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from secrag.attack_domains import TECHNIQUE_SOURCES

from .sources.interface import UpstreamVersion
from .sources.mitre_lookup import techniques_from_bundle
from .sources.records import RECORD_FORMAT
from .sources.registry import SourceSpec
from .store import SourceRow

ATTACK_SOURCE = "mitre_attack"
# The sources of each ATT&CK domain's techniques: the lookup is read from them, and they enrich from their own bundle.
LOOKUP_SOURCES = frozenset(TECHNIQUE_SOURCES.values())


def source_row(spec: SourceSpec) -> SourceRow:
    return SourceRow(
        name=spec.name,
        kind="online",
        description=spec.description,
        category=spec.category,
        upstream=spec.repo or spec.feed_url or None,
        branch=spec.branch,
        tracking=spec.tracking,
        poll_interval=spec.poll_interval,
    )


def pinned_version(spec: SourceSpec, pin: str) -> UpstreamVersion:
    """A stand-in probe result for a pinned fetch (the fetcher resolves the pin itself)."""
    return UpstreamVersion(
        source=spec.name, tracking=spec.tracking, version=pin, commit=None, url=spec.repo, checked_at=datetime.now(UTC)
    )


def enrichment_lookup(spec: SourceSpec, root: Path, published: Mapping[str, str]) -> Mapping[str, str]:
    """Technique names used to enrich chunks.

    ATT&CK (each domain's technique source) is enriched from its own bundle, so its chunks are the same on a
    first build (empty lookup table) as on any refresh; every other source uses the published lookup table.
    """
    if spec.name not in LOOKUP_SOURCES:
        return published
    bundle = root / spec.paths[0]
    return {t.id: t.full_name for t in techniques_from_bundle(bundle) if t.active}


def publish_fingerprint(spec: SourceSpec, version: str, chunker: str, lookup: Mapping[str, str] | None) -> str:
    """What a published version was built from: upstream version, parser, chunker, ATT&CK names and what
    a record carries (RECORD_FORMAT: a store published before records kept their upstream form is
    republished once).

    ATT&CK enriches from its own bundle, so its version already covers its lookup (`lookup` None).
    """
    names = (
        "own-bundle"
        if lookup is None
        else hashlib.sha256(json.dumps(sorted(lookup.items()), separators=(",", ":")).encode()).hexdigest()
    )
    parts = [version, spec.parser_version, chunker, names, RECORD_FORMAT]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()
