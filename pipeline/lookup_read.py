"""The technique lookup's input: each ATT&CK domain's techniques, read from the bundle its source published."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from secrag.db.queries import Queries

from .refresh_inputs import pinned_version
from .sources.interface import Upstream
from .sources.mitre_lookup import MitreTechnique, techniques_from_bundle
from .sources.registry import SourceSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LookupInput:
    """The techniques read, the version read of each source, and the version each domain's techniques come from."""

    techniques: list[MitreTechnique] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)  # source -> version
    by_domain: dict[str, str] = field(default_factory=dict)  # domain -> version
    waiting: list[str] = field(default_factory=list)  # sources with no published version yet


def read_lookup(
    specs: Sequence[SourceSpec], upstream: Upstream, conn: psycopg.Connection, queries: Queries, work_dir: Path
) -> LookupInput:
    """Every domain source's techniques at its published version (`queries` are the pipeline's); a source not
    published yet is listed in `waiting`."""
    read = LookupInput()
    for spec in specs:
        row = conn.execute(queries.source_state, {"source": spec.name}).fetchone()
        version = row[0] if row else None
        if not version:
            read.waiting.append(spec.name)
            continue
        with tempfile.TemporaryDirectory(prefix="mitre-lookup-", dir=work_dir) as tmp:
            fetched = upstream.fetch(spec, pinned_version(spec, version), Path(tmp) / "checkout", pin=version)
            techniques = techniques_from_bundle(fetched.root / spec.paths[0])
        read.versions[spec.name] = version
        read.by_domain.update({t.domain: version for t in techniques})
        read.techniques.extend(techniques)
    return read
