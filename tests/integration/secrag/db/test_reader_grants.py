"""The reader's rights are an allowlist: what secrag_reader can read is exactly sql/reader_grants.sql."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import psycopg
import pytest

from secrag.db import database, migrations, reader_grants
from secrag.files.package_data import sql_dir

SQL_DIR = sql_dir()
_GRANT = re.compile(r"GRANT SELECT \(([^)]*)\)\s+ON (\w+) TO secrag_reader;")

# Every column of every relation in every schema but the catalogs that secrag_reader may read,
# directly, through PUBLIC or through a role it is a member of.
_READABLE = """
SELECT c.relname, a.attname
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%%'
  AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
  AND has_column_privilege('secrag_reader', c.oid, a.attnum, 'SELECT')
ORDER BY n.nspname, c.relname, a.attnum
"""


def allowlist(sql: Path = SQL_DIR) -> dict[str, list[str]]:
    """Table -> columns, as sql/reader_grants.sql grants them."""
    text = (sql / reader_grants.GRANTS_FILE).read_text(encoding="utf-8")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    grants = {table: [c.strip() for c in columns.split(",")] for columns, table in _GRANT.findall(code)}
    # no grant the pattern misses: the only other one is the schema's USAGE
    assert code.count("GRANT ") == len(grants) + 1 and "GRANT USAGE ON SCHEMA public TO secrag_reader;" in code
    return grants


def readable(conn: psycopg.Connection) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for table, column in conn.execute(_READABLE).fetchall():
        found.setdefault(table, []).append(column)
    return found


def test_the_reader_reads_exactly_the_allowlist(db: psycopg.Connection) -> None:
    expected = allowlist()
    assert readable(db) == expected
    assert "query_log" not in expected and "tuning_audit" not in expected and "ingested_documents" not in expected


def test_the_reader_holds_no_other_right_and_no_default_privilege(db: psycopg.Connection) -> None:
    others = db.execute(
        """SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND has_table_privilege('secrag_reader', c.oid,
                 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')"""
    ).fetchall()
    assert others == []  # SELECT is granted by column only, nothing table-wide
    defaults = db.execute(
        "SELECT count(*) FROM pg_default_acl d, aclexplode(d.defaclacl) x WHERE x.grantee = 'secrag_reader'::regrole"
    ).fetchone()
    assert defaults == (0,)


def _with_migration(tmp_path: Path, text: str) -> Path:
    target = tmp_path / "sql"
    shutil.copytree(SQL_DIR, target)
    n = len(migrations.load_migrations(target / "migrations")) + 1
    (target / "migrations" / f"{n:04d}_later.sql").write_text(text, encoding="utf-8")
    return target


def test_a_new_table_or_column_is_unreadable_until_listed(db_url: str, tmp_path: Path) -> None:
    later = _with_migration(
        tmp_path,
        "CREATE TABLE later_secrets (id int, secret text);\n"
        "ALTER TABLE sources ADD COLUMN later_secret text;\n"
        "ALTER TABLE source_versions ADD COLUMN later_secret text;\n",
    )
    with database.connect(db_url, autocommit=True) as conn:
        migrations.migrate(conn, later)
        assert readable(conn) == allowlist()
        conn.execute("SET ROLE secrag_reader")
        assert conn.execute("SELECT count(*) FROM sources").fetchone() == (0,)
        for statement in (
            "SELECT secret FROM later_secrets",
            "SELECT later_secret FROM sources",
            "SELECT later_secret FROM source_versions",
            "SELECT error_detail FROM source_versions",  # 0019's full error text: the operators' alone
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


def test_a_right_granted_by_hand_is_taken_back_by_the_next_migrate(db_url: str) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        conn.execute("GRANT SELECT ON tuning_audit, query_log TO secrag_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO secrag_reader")
        assert migrations.migrate(conn, SQL_DIR) == []
        assert readable(conn) == allowlist()
