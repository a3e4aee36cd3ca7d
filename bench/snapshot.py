"""Store snapshot round trip: size, export time, and verify-and-import time into a fresh database.

    python bench/snapshot.py --database-url URL [--gzip] [--keep FILE] [--json]

Exports the public part of the store at URL (`secrag snapshot export`), then imports it into a fresh, migrated
database `secrag_snapshot_bench` on the same server (`secrag snapshot import`: every checksum read, one
transaction, the model's HNSW index built after the vectors are in), and drops that database. The model is
the snapshot's own (its weights must be on this machine). Prints the parts' rows and bytes.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

from psycopg import sql

from pipeline.snapshot.export import export_snapshot
from pipeline.snapshot.loading import import_snapshot, local_model
from secrag.db import database, migrations
from secrag.settings import get_settings

BENCH_DB = "secrag_snapshot_bench"


def fresh_database(url: str) -> str:
    """A new migrated database BENCH_DB on url's server (a leftover dropped first)."""
    with database.connect(database.with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DB)))
    target = database.with_database(url, BENCH_DB)
    with database.connect(target, autocommit=True) as conn:
        migrations.migrate(conn, get_settings().sql_dir)
    return target


def drop_database(url: str) -> None:
    with database.connect(database.with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True, help="The store to export (never changed).")
    ap.add_argument("--gzip", action="store_true", help="Write a .tar.gz (gzip level 1) instead of a plain tar.")
    ap.add_argument("--keep", type=Path, default=None, help="Keep the snapshot file here.")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    settings = get_settings()
    with tempfile.TemporaryDirectory(prefix="snapshot-bench-") as tmp:
        path = args.keep or Path(tmp) / ("store.tar.gz" if args.gzip else "store.tar")
        started = time.monotonic()
        manifest = export_snapshot(args.database_url, settings.sql_dir, settings.models_dir, path).manifest
        export_s = time.monotonic() - started
        size = path.stat().st_size
        target = fresh_database(args.database_url)
        try:
            model = local_model(manifest.model.id, settings.models_dir)
            with database.connect(target, autocommit=True) as conn:
                started = time.monotonic()
                done = import_snapshot(conn, settings.sql_dir, path, model)
                import_s = time.monotonic() - started
        finally:
            drop_database(args.database_url)
    figures = {
        "model": manifest.model.id,
        "sources": len(manifest.sources),
        "parts": {p.table: {"rows": p.rows, "bytes": p.bytes} for p in manifest.parts},
        "snapshot_bytes": size,
        "export_seconds": round(export_s, 2),
        "import_seconds": round(import_s, 2),
        "imported_chunks": done.rows["chunks"],
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{'part':<20}{'rows':>10}{'MiB':>10}")
    for part in manifest.parts:
        print(f"{part.table:<20}{part.rows:>10}{part.bytes / 2**20:>10.1f}")
    print(f"snapshot: {size / 2**20:.1f} MiB ({'tar.gz' if path.name.endswith('.gz') else 'tar'}), model {model.id}")
    print(f"export: {export_s:.1f} s; verify and import into a fresh database: {import_s:.1f} s")


if __name__ == "__main__":
    main()
