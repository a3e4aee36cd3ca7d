"""Republish a built store's sources from a snapshot with a chunk configuration, then embed what changed.

    python bench/rechunk.py --database-url URL --upstream ../shared/upstream \
        [--copy-to NAME] [--target 1000] [--overlap 150] [--across] [--only sigma,capec]

Each source is parsed from its snapshot folder (as its checkout) and published through the pipeline's
Store.publish at the version the store serves, with the given chunking (and the source's own registry
`chunking` over it), forced so that nothing is refused; then every chunk without a vector for the
active model is embedded with the pipeline's document encoder. With --copy-to, the store is first
copied (CREATE DATABASE ... TEMPLATE) and the copy is changed, so two chunkings can be compared with
bench/quality.py. Prints per source what changed, then the embedding figures.

The first run after migration 0013 on an older store also fills each record's stored upstream form
(every document is an update once; chunks whose text is unchanged keep their vectors).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from urllib.parse import urlsplit

from psycopg import sql

from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.refresh_inputs import enrichment_lookup
from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from pipeline.store import Store
from secrag.db import database
from secrag.files.package_data import sql_dir
from secrag.models.encoders import document_encoder
from secrag.settings import get_settings


def copy_database(url: str, name: str) -> str:
    """A fresh copy of the database at `url` named `name` on the same server; its URL."""
    source = urlsplit(url).path.lstrip("/")
    with database.connect(database.with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(source)))
    return database.with_database(url, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--upstream", type=Path, required=True)
    parser.add_argument("--copy-to", default=None)
    parser.add_argument("--target", type=int, default=1000)
    parser.add_argument("--overlap", type=int, default=150)
    parser.add_argument("--across", action="store_true", help="Chunks overlap across paragraphs.")
    parser.add_argument("--only", default="", help="Comma-separated source names (default: all in the store).")
    args = parser.parse_args()

    url = copy_database(args.database_url, args.copy_to) if args.copy_to else args.database_url
    chunking = ChunkConfig(args.target, args.overlap, args.across)
    only = {s for s in args.only.split(",") if s}
    store = Store(sql_dir())
    report: dict[str, object] = {"database": urlsplit(url).path.lstrip("/"), "chunker": chunking.version}
    sources = {}
    started = time.monotonic()
    with database.connect(url, autocommit=True) as conn:
        served = dict(conn.execute("SELECT name, current_version FROM sources WHERE kind = 'online'").fetchall())
        published = store.technique_names(conn)
        for name, spec in sorted(default_registry().items()):
            root = args.upstream / name
            if name not in served or not root.is_dir() or (only and name not in only):
                continue
            version = served[name]
            outcome = parse_source(spec, root, version=version)
            result = store.publish(
                conn,
                source=name,
                version=version,
                records=outcome.records,
                skipped=outcome.skipped,
                lookup=enrichment_lookup(spec, root, published),
                chunking=chunking.with_overrides(spec.chunking),
                force=True,
            )
            sources[name] = {
                "inserted": result.inserted,
                "updated": result.updated,
                "unchanged": result.unchanged,
                "deleted": result.deleted,
                "chunks_written": result.chunks_written,
            }
            print(name, json.dumps(sources[name]), flush=True)
        report["publish_s"] = round(time.monotonic() - started, 1)
        active = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()
        model = active[0] if active else get_settings().embedding_model
        encoder = document_encoder(model, batch_size=64, threads=0, cache_dir=get_settings().models_dir)
        stats = embed_pending(conn, encoder, sql_dir())
        report["embedding"] = {
            "model": model,
            "embedded": stats.embedded,
            "seconds": round(stats.seconds, 1),
        }
        report["chunks"] = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
    report["sources"] = sources
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
