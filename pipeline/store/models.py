"""What the store takes and returns: a source's registry facts, a document's access, a publish's outcome."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SourceRow:
    """The registry facts the `sources` table keeps about a source."""

    name: str
    kind: str  # online | user_folder | static
    description: str = ""
    category: str = ""
    upstream: str | None = None
    branch: str | None = None
    tracking: str | None = None
    poll_interval: int | None = None  # seconds between probes (online sources)


@dataclass(frozen=True)
class Access:
    """Who may see a source's documents: public (tenant None) or one tenant's users and groups."""

    tenant: str | None = None
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


PUBLIC = Access()  # every user of every tenant may see the documents


@dataclass(frozen=True)
class PublishResult:
    """What one publish did; `status` is published or refused."""

    source: str
    version: str
    status: str
    parsed: int
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    modified: int = 0  # the updated documents whose content changed (the change history's `modified`)
    chunks_written: int = 0
    artefacts: int = 0  # artefact identifiers written (secrag/artefacts.py)
    kept: int = 0  # documents left as they were: their files are there but could not be read
    reason: str | None = None
    refused: str | None = None  # the refusal's kind (empty, shrank, config_error), as the version records it
    seconds: float = 0.0
    version_id: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
