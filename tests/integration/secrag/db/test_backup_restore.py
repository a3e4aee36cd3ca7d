"""docs/howto/backup-restore.md's own lines, run as written: a dump of a store restored into an empty
database keeps the tuning and its audit, the grants and the schema."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg

from secrag.db import database, schema
from secrag.settings import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "howto" / "backup-restore.md"
_SH = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _lines(section: str) -> str:
    """The page's shell lines under one heading, with `.venv/bin/` as this interpreter's folder."""
    text = PAGE.read_text(encoding="utf-8").split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = _SH.findall(re.sub(r"^ {3}", "", text, flags=re.MULTILINE))  # blocks inside numbered steps
    assert blocks, f"no shell lines under {section}"
    return "\n".join(blocks).replace(".venv/bin/", f"{Path(sys.executable).parent}/")


def _run(script: str, url: str, cwd: Path) -> None:
    env = {**os.environ, "DATABASE_URL": url, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("SECRAG_DATABASE_URL", None)
    shell = f"set -euo pipefail\ncd {REPO_ROOT}\n{script.replace('secrag.dump', str(cwd / 'secrag.dump'))}"
    result = subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]


def _tuning(url: str) -> list[tuple[object, ...]]:
    with database.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT t.setting, t.query_type, t.value, a.reason"
            " FROM tuned_value t JOIN tuning_audit a ON a.id = t.audit_id"
        ).fetchall()


def test_the_documented_dump_and_restore(db_url: str, empty_db_url: str, tmp_path: Path) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        audit = conn.execute(
            "INSERT INTO tuning_audit (who, action, setting, query_type, old, old_tuned, new, new_tuned, reason) "
            "VALUES ('test', 'apply', 'score_threshold', 'keyword', 0.3, false, 0.25, true, 'restore test')"
            " RETURNING id"
        ).fetchone()
        assert audit is not None
        conn.execute(
            "INSERT INTO tuned_value (setting, query_type, value, audit_id)"
            " VALUES ('score_threshold', 'keyword', 0.25, %s)",
            [audit[0]],
        )
    _run(_lines("Back up"), db_url, tmp_path)
    _run(_lines("Restore"), empty_db_url, tmp_path)
    assert _tuning(empty_db_url) == _tuning(db_url) == [("score_threshold", "keyword", 0.25, "restore test")]
    assert schema.dump(empty_db_url) == schema.dump(db_url)
    with database.connect(empty_db_url, autocommit=True) as conn:
        readable = conn.execute("SELECT has_table_privilege('secrag_reader', 'documents', 'SELECT')").fetchone()
        assert readable is not None and readable[0] is False  # column grants only, as sql/reader_grants.sql lists
        column = conn.execute("SELECT has_column_privilege('secrag_reader', 'documents', 'title', 'SELECT')").fetchone()
        assert column is not None and column[0] is True
