"""One-time documents: single files stored in the database by `secrag ingest add` (migration 0016) and
published by the `ingested/documents` asset, each as its own access-controlled source `ingested_<name>`.

They work where runs execute in other pods than the CLI: the file travels in the database, not on a
shared disk.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from secrag.errors import ConfigError

from .folders import INGESTED_PREFIX, record_for
from .sources.records import Record
from .store import Access

SOURCE_PREFIX = INGESTED_PREFIX
NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,47}$")  # with the prefix, a source name and a Dagster name
DEFAULT_MAX_BYTES = 20 * 1024 * 1024


def check_name(name: str) -> str:
    if not NAME.match(name):
        raise ConfigError(
            f"ingest name {name!r} must be 1-48 lower-case letters, digits or underscores, starting with a "
            "letter or digit (it names the source ingested_<name>)"
        )
    return name


def source_name(name: str) -> str:
    return SOURCE_PREFIX + check_name(name)


@dataclass(frozen=True)
class Ingested:
    """One stored file, as the publishing asset reads it."""

    name: str
    filename: str
    sha256: str
    content: bytes  # zlib-compressed
    tenant: str | None
    users: tuple[str, ...]
    groups: tuple[str, ...]
    removed: bool

    @property
    def source(self) -> str:
        return source_name(self.name)

    @property
    def access(self) -> Access:
        return Access(self.tenant, self.users, self.groups)

    def record(self) -> Record:
        """Its document, read as a folder file of its format (ParseError when it cannot be)."""
        return record_for(self.source, self.filename, zlib.decompress(self.content), self.sha256)
