"""The API reader's rights (sql/reader_grants.sql): applied after every migrate, the one list of what it reads."""

from __future__ import annotations

import logging
from pathlib import Path

import psycopg

log = logging.getLogger(__name__)

GRANTS_FILE = "reader_grants.sql"
# The migration that stopped granting new tables by default (0017_reader_allowlist.sql); an older schema
# still relies on those defaults, and this file names tables it does not have yet.
SINCE_VERSION = 17


def apply(conn: psycopg.Connection, sql_dir: Path) -> None:
    """Revoke every right of secrag_reader on secrag's tables and grant the listed columns, atomically,
    so no reader session ever sees the tables without its grants."""
    with conn.transaction():
        conn.execute((sql_dir / GRANTS_FILE).read_text(encoding="utf-8"))
    log.info("applied the reader's grants", extra={"file": GRANTS_FILE})
