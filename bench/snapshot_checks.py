"""What checking an import's rows public costs: the statement `secrag snapshot import` runs before it commits
(pipeline/snapshot/loading.py check_public), over synthetic public rows of the bench store's size written in
one transaction as an import writes them, with a user folder already in the store.

    python bench/snapshot_checks.py --database-url URL [--documents 42257] [--chunks 72116]

Creates a migrated database `secrag_snapshot_checks_bench` on URL's server, writes the rows (rolled back) and
drops it. Prints the rows written and the check's seconds (best of three).
"""

from __future__ import annotations

import argparse
import time

from psycopg import sql

from pipeline.snapshot.loading import check_public
from secrag.db import database, migrations
from secrag.db.queries import Queries
from secrag.settings import get_settings

BENCH_DB = "secrag_snapshot_checks_bench"
DIMENSIONS = 384

ROWS = [
    "INSERT INTO sources (name, kind) VALUES ('notes', 'user_folder')",
    "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash, tenant) "
    "SELECT 'notes:' || i, 'notes', 'v1', 'note', 'body', 'n' || i, 'acme' FROM generate_series(1, 1000) i",
    "COMMIT",  # the store as it was before the import: a user folder
    "INSERT INTO embedding_models (model_id, dimensions) VALUES ('bench', %(dimensions)s)",
    "CREATE TEMPORARY TABLE snapshot_embeddings (LIKE embeddings INCLUDING DEFAULTS) ON COMMIT DROP",
    "INSERT INTO sources (name, kind) SELECT 'public_' || i, 'online' FROM generate_series(1, 30) i",
    "INSERT INTO source_versions (source, version, status, finished_at) "
    "SELECT 'public_' || i, 'v1', 'published', now() FROM generate_series(1, 30) i",
    "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash) "
    "SELECT 'public_' || (i %% 30 + 1) || ':' || i, 'public_' || (i %% 30 + 1), 'v1', 'title', 'body', 'd' || i "
    "FROM generate_series(1, %(documents)s) i",
    "INSERT INTO document_raw (doc_id, media_type, whole_file, size, raw) "
    "SELECT doc_id, 'text/plain', true, 4, 'body' FROM documents WHERE source <> 'notes'",
    "INSERT INTO document_artefacts (doc_id, source, kind, field, value, key, folded) "
    "SELECT doc_id, source, 'sha256', 'hashes', md5(doc_id), md5(doc_id), false FROM documents "
    "WHERE source <> 'notes'",
    "INSERT INTO chunks (chunk_id, doc_id, source, ordinal, title, text, enriched_text, content_hash) "
    "SELECT d.doc_id || '#' || o, d.doc_id, d.source, o, 't', 'text', 'text', 'c' || d.doc_id || o "
    "FROM documents d CROSS JOIN generate_series(0, 1) o WHERE d.source <> 'notes' "
    "ORDER BY 1 LIMIT %(chunks)s",
    "INSERT INTO snapshot_embeddings (content_hash, model_id, vector) "
    "SELECT content_hash, 'bench', array_fill(0.1, ARRAY[%(dimensions)s])::vector FROM chunks "
    "WHERE source <> 'notes'",
    "INSERT INTO embeddings SELECT * FROM snapshot_embeddings",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True, help="A server to create the bench database on.")
    ap.add_argument("--documents", type=int, default=42257)
    ap.add_argument("--chunks", type=int, default=72116)
    args = ap.parse_args()
    settings = get_settings()
    admin = database.with_database(args.database_url, "postgres")
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB))
    with database.connect(admin, autocommit=True) as conn:
        conn.execute(drop)
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DB)))
    try:
        url = database.with_database(args.database_url, BENCH_DB)
        with database.connect(url, autocommit=True) as conn:
            migrations.migrate(conn, settings.sql_dir)
        with database.connect(url) as conn:
            params = {"documents": args.documents, "chunks": args.chunks, "dimensions": DIMENSIONS}
            started = time.monotonic()
            for statement in ROWS:
                if statement == "COMMIT":
                    conn.commit()
                else:
                    conn.execute(statement, params)
            written = time.monotonic() - started
            counts = {
                table: conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
                for table in ("documents", "document_raw", "document_artefacts", "chunks", "embeddings")
            }
            q = Queries(settings.sql_dir, "snapshot")
            times = []
            for _ in range(3):
                started = time.monotonic()
                check_public(conn, q)
                times.append(time.monotonic() - started)
            conn.rollback()
    finally:
        with database.connect(admin, autocommit=True) as conn:
            conn.execute(drop)
    print(", ".join(f"{table} {row[0] if row else 0}" for table, row in counts.items()) + " (1,000 of a user folder)")
    print(f"rows written in {written:.1f} s; the public-rows check: {min(times):.3f} s (best of 3)")


if __name__ == "__main__":
    main()
