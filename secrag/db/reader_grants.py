"""The API reader's rights (sql/reader_grants.sql): applied after every migrate, the one list of what it reads."""

from __future__ import annotations

import logging
from pathlib import Path

import psycopg

log = logging.getLogger(__name__)

GRANTS_FILE = "reader_grants.sql"
# The schema this file describes: the newest migration that changed what the reader is granted (0027, the
# technique lookup's domain column). Default privileges stopped at 0017; a schema older than this one names objects
# differently, so the file is applied from here on (only tests stop a store between the two).
SINCE_VERSION = 27


def apply(conn: psycopg.Connection, sql_dir: Path) -> None:
    """Revoke every right of secrag_reader on secrag's tables and grant the listed columns, atomically,
    so no reader session ever sees the tables without its grants."""
    with conn.transaction():
        conn.execute((sql_dir / GRANTS_FILE).read_text(encoding="utf-8"))
    log.info("applied the reader's grants", extra={"file": GRANTS_FILE})
