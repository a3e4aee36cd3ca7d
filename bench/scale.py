"""Sizing: synthetic stores of N chunks grown from a real one; index builds, sizes, memory and search latency.

Per N, `secrag_scale_<N>` is cloned from the store (nothing connected to it), grown to about N chunks without
its HNSW, full-text and trigram indexes, which are then rebuilt and timed: `copies` repeats every document with
noisy copies of its vectors, `mixed` adds notes mixing two real chunks' sentences and vectors. Printed: index
builds, sizes, the server's PSS, the in-process API's p50/p99 per search shape. --recall-ef: the HNSW walk's
recall@60 against exact cosine per ef_search. --api-memory N: each worker's memory under `serve --workers N`.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from secrag.db import database

from lib.api import in_process
from lib.processes import children, memory_mb, post_json, serving
from lib.queries import DEV_QUERIES, load_items
from lib.store import bench_store_url
from lib.table import print_table
from lib.timing import percentile

SHAPES = {"hybrid": {}, "hybrid, sources=[sigma]": {"filters": {"sources": ["sigma"]}}, "vector": {"mode": "vector"}}
GROWN = "position('~' in d.doc_id) = 0 AND abs(hashtext(d.doc_id)) %% 10000 < %(share)s"  # a round's documents
COPY_VECTORS = (  # each new chunk's vector: its original's plus noise (a trigger fills chunk_vectors)
    "INSERT INTO embeddings (content_hash, model_id, vector) SELECT DISTINCT ON (c.content_hash) c.content_hash,"
    " e.model_id, l2_normalize((SELECT array_agg(x + %(w)s * (2 * random() - 1)) FROM unnest(e.vector::real[]) x)"
    "::vector) FROM chunks c JOIN embeddings e ON e.content_hash = split_part(c.content_hash, '~', 1)"
    " AND e.model_id = %(model)s WHERE c.doc_id LIKE '%%~' || %(k)s::text ORDER BY c.content_hash"
)
RELATIONS = {"embeddings (heap)": ("embeddings", "relation"), "chunk_vectors (heap)": ("chunk_vectors", "relation"),
             "chunks (with toast)": ("chunks", "total_relation")}  # fmt: skip
MIXED_SOURCE = "synthetic_notes"
MIXED = [  # a round: the folder, the real chunks numbered (once), then the round's notes
    "INSERT INTO sources (name, kind, description, category) VALUES (%(folder)s, 'user_folder',"
    " 'bench/scale.py --texts mixed', 'user') ON CONFLICT DO NOTHING",
    "CREATE TEMP TABLE IF NOT EXISTS base_chunks AS SELECT row_number() OVER (ORDER BY chunk_id) AS rn, chunk_id,"
    " doc_id, ordinal, title, text, content_hash FROM chunks WHERE source <> %(folder)s",
    "CREATE INDEX IF NOT EXISTS base_chunks_rn ON base_chunks (rn)",
    "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash)"
    " SELECT %(folder)s || ':' || d.doc_id || '~' || %(k)s::text, %(folder)s, 'synthetic', d.title || ' (notes)',"
    " '', d.content_hash || '~' || %(k)s::text FROM documents d WHERE d.source <> %(folder)s AND " + GROWN,
    # each chunk's text: its sentences and a partner's (a base chunk picked by a hash), shuffled
    "INSERT INTO chunks (chunk_id, doc_id, source, ordinal, title, text, enriched_text, content_hash)"
    " SELECT n.doc_id || '#' || b.ordinal, n.doc_id, %(folder)s, b.ordinal, b.title, m.text, m.text,"
    " 'mix:' || b.content_hash || ':' || p.content_hash || ':' || %(k)s::text || ':' || b.chunk_id"
    " FROM base_chunks b JOIN documents d ON d.doc_id = b.doc_id"
    " CROSS JOIN LATERAL (SELECT %(folder)s || ':' || d.doc_id || '~' || %(k)s::text AS doc_id) n"
    " JOIN base_chunks p ON p.rn = 1 + abs(hashtext(b.chunk_id || '~' || %(k)s::text)) %% %(base)s"
    " CROSS JOIN LATERAL (SELECT string_agg(s, '. ' ORDER BY md5(s || b.chunk_id)) AS text"
    "   FROM unnest(regexp_split_to_array(b.text || ' ' || p.text, '[.]\\s+')) s) m"
    " WHERE d.source <> %(folder)s AND " + GROWN,
    # its vector: the two chunks' mixed in a proportion of 0.3 to 0.7, a point between two real ones
    "INSERT INTO embeddings (content_hash, model_id, vector) SELECT c.content_hash, %(model)s, l2_normalize("
    " e1.vector * array_fill(w.a, ARRAY[vector_dims(e1.vector)])::vector"
    " + e2.vector * array_fill(1 - w.a, ARRAY[vector_dims(e1.vector)])::vector) FROM chunks c"
    " CROSS JOIN LATERAL (SELECT (0.3 + 0.4 * (abs(hashtext(c.content_hash)) %% 1000) / 1000.0)::real AS a) w"
    " JOIN embeddings e1 ON e1.content_hash = split_part(c.content_hash, ':', 2) AND e1.model_id = %(model)s"
    " JOIN embeddings e2 ON e2.content_hash = split_part(c.content_hash, ':', 3) AND e2.model_id = %(model)s"
    " WHERE c.source = %(folder)s AND c.doc_id LIKE '%%~' || %(k)s::text",
    "SELECT count(*) FROM chunks WHERE source = %(folder)s AND doc_id LIKE '%%~' || %(k)s::text",
]


def one(conn: psycopg.Connection, query: str, params: Any = None) -> Any:  # noqa: ANN401
    return conn.execute(query, params).fetchone()[0]  # type: ignore[index]


def copy_statement(conn: psycopg.Connection, table: str, replaced: dict[str, str]) -> sql.Composed:
    """INSERT of a round's copies of the table's rows, `replaced` columns computed (generated ones left out)."""
    cols = [r[0] for r in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s"
        " AND is_generated = 'NEVER' ORDER BY ordinal_position", [table])]  # fmt: skip
    exprs = [sql.SQL(replaced[c]) if c in replaced else sql.Identifier(c) for c in cols]
    return sql.SQL("INSERT INTO {t} ({cols}) SELECT {exprs} FROM {t} d WHERE {where}").format(
        t=sql.Identifier(table), cols=sql.SQL(", ").join(map(sql.Identifier, cols)),
        exprs=sql.SQL(", ").join(exprs), where=sql.SQL(GROWN))  # fmt: skip


def grow(conn: psycopg.Connection, model: str, base: int, target: int, noise: float) -> None:
    """Copies of the original documents, chunks and vectors (each plus uniform noise of standard deviation
    `noise` a dimension) until about `target` chunks."""
    k = "'~' || %(k)s::text"
    ids = {"doc_id": f"doc_id || {k}", "content_hash": f"content_hash || {k}"}
    statements = [
        copy_statement(conn, "documents", ids),
        copy_statement(conn, "chunks", {**ids, "chunk_id": f"doc_id || {k} || '#' || ordinal"}),
        COPY_VECTORS,
        "SELECT count(*) FROM chunks WHERE doc_id LIKE '%%~' || %(k)s::text",
    ]
    grow_in_rounds(conn, statements, {"w": noise * math.sqrt(3), "model": model}, base, target)


def grow_mixed(conn: psycopg.Connection, model: str, base: int, target: int) -> None:
    """User-folder-like notes (public folder source `synthetic_notes`, no labels) until about `target` chunks, none
    a copy of another; the vector stands for what a mixed text's embedding would be near."""
    grow_in_rounds(conn, MIXED, {"model": model, "folder": MIXED_SOURCE, "base": base}, base, target)


def grow_in_rounds(conn: psycopg.Connection, statements: list[Any], params: dict[str, Any], base: int,
                   target: int) -> None:  # fmt: skip
    """The statements once a round, each round one transaction on the share of the documents still missing; the
    last statement counts the round's chunks."""
    missing, k = target - base, 0
    while missing > 0:
        k += 1
        share, started = min(10000, math.ceil(10000 * missing / base)), time.monotonic()
        with conn.transaction():
            for statement in statements[:-1]:
                conn.execute(statement, {**params, "k": k, "share": share})
            added = one(conn, statements[-1], {**params, "k": k})
        missing -= added
        seconds = time.monotonic() - started
        print(f"round {k} ({share / 100:.1f} % of the documents): {added} chunks in {seconds:.1f}s", flush=True)


def search_latency(url: str, texts: list[str], k: int) -> list[list[object]]:
    """p50/p99 ms of POST /v1/search per shape, in process (caches off), after a warm pass; and the failures (a 504
    when a statement outlives the reader's timeout: its time counts too)."""
    rows: list[list[object]] = []
    with in_process(url) as api:
        for shape, body in SHAPES.items():
            times, failed = [], 0
            for timed in (False, True):
                for text in texts:
                    started = time.perf_counter()
                    status = api.post("/v1/search", json={"query": text, "k": k, **body}).status_code
                    if timed:
                        times.append((time.perf_counter() - started) * 1000)
                        failed += status != 200
            rows.append([shape, round(percentile(times, 50), 1), round(percentile(times, 99), 1), failed])
    return rows


def recall_per_ef(url: str, texts: list[str], k: int, efs: list[int]) -> None:
    """Recall@k of the vector leg's HNSW walk against exact cosine (a sequential scan), and p50/p99, per ef_search."""
    from pgvector.psycopg import register_vector

    from serving.search.encoder import shared_encoder

    with database.connect(url, autocommit=True) as conn:
        register_vector(conn)
        model = one(conn, "SELECT model_id FROM embedding_models WHERE active")
        encoder = shared_encoder(model, 1, backend="onnx", encoder_threads=1, cache_size=0)
        vectors = [encoder.encode(t) for t in texts]
        statement = sql.SQL(
            "SELECT c.chunk_id FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash "
            "WHERE e.model_id = {model} ORDER BY e.vector::vector({d}) <=> %(q)s::vector({d}) LIMIT %(k)s"
        ).format(model=sql.Literal(model), d=sql.Literal(encoder.dimensions))
        conn.execute("SET max_parallel_workers_per_gather = 0; SET jit = off; SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET enable_indexscan = off")  # the truth: a sequential scan
        truth = [{r[0] for r in conn.execute(statement, {"q": v, "k": k})} for v in vectors]
        conn.execute("RESET enable_indexscan")
        rows = []
        for ef in efs:
            conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef)))
            times, recalls = [], []
            for v, expected in zip(vectors, truth, strict=True):
                started = time.perf_counter()
                found = {r[0] for r in conn.execute(statement, {"q": v, "k": k})}
                times.append((time.perf_counter() - started) * 1000)
                recalls.append(len(found & expected) / max(1, len(expected)))
            rows.append([ef, statistics.mean(recalls), min(recalls), percentile(times, 50), percentile(times, 99)])
    print(f"model {model}, {len(vectors)} dev queries, recall@{k}")
    print_table(["ef_search", "recall", "min", "p50 ms", "p99 ms"], rows)


def measure(server_url: str, target: int, args: argparse.Namespace, texts: list[str]) -> None:
    """Clone, grow, rebuild the indexes, measure and report one target (0: the store as it is)."""
    base_db = server_url.split("?")[0].rsplit("/", 1)[1]
    name = f"secrag_scale_{target}" + ("_mixed" if args.texts == "mixed" else "")
    admin = database.with_database(server_url, "postgres")
    with database.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(base_db)))
    url = database.with_database(server_url, name)
    with database.connect(url, autocommit=True) as conn:
        model = one(conn, "SELECT model_id FROM embedding_models WHERE active")
        definitions = dict(conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND (indexname IN"
            " ('chunks_tsv_idx', 'chunks_first_title_trgm_idx') OR (indexdef LIKE '%%USING hnsw%%'"
            " AND indexdef LIKE '%%' || %s || '''%%'))", [model]).fetchall())  # fmt: skip
        conn.execute("SET maintenance_work_mem = '4GB'")  # the index builds in memory up to 1M chunks
        conn.execute("DELETE FROM chunk_vectors WHERE model_id <> %s", [model])
        conn.execute("DELETE FROM embeddings WHERE model_id <> %s", [model])
        for index in definitions:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
        base, started = one(conn, "SELECT count(*) FROM chunks"), time.monotonic()
        print(f"{name}: {base} chunks of model {model}; growing to about {target}", flush=True)
        if args.texts == "mixed":
            grow_mixed(conn, model, base, target)
        else:
            grow(conn, model, base, target, 0.015)
        grown_s = time.monotonic() - started
        conn.execute("VACUUM ANALYZE")
        built = {}
        for index, definition in definitions.items():
            started = time.monotonic()
            conn.execute(definition)
            built[index] = round(time.monotonic() - started, 1)
        chunks, documents = one(conn, "SELECT count(*) FROM chunks"), one(conn, "SELECT count(*) FROM documents")
        sizes = [["database", round(one(conn, "SELECT pg_database_size(current_database()) / 1048576.0")), None]]
        for label, (relation, size) in {**{i: (i, "total_relation") for i in definitions}, **RELATIONS}.items():
            mb = one(conn, f"SELECT pg_{size}_size(%s::regclass) / 1048576.0", [relation])
            sizes.append([label, round(mb), built.get(relation)])
        latency = search_latency(url, texts, 10)
        postmaster = int((Path(one(conn, "SHOW data_directory")) / "postmaster.pid").read_text().split()[0])
        pss = sum(memory_mb(pid)[1] for pid in [postmaster, *children(postmaster)])
        buffers = one(conn, "SHOW shared_buffers")
    if not args.keep:
        with database.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    print(f"\n== {chunks:,} chunks, {documents:,} documents (target {target:,}); grown in {grown_s:.0f}s")
    print(f"server PSS after the searches: {pss:.0f} MB (shared_buffers {buffers})")
    print_table(["relation", "MB", "index build s"], sizes)
    print_table(["search", "p50 ms", "p99 ms", "failed"], latency)


def api_memory(url: str, workers: int) -> None:
    """RSS and PSS of each worker of `secrag serve --workers N`, after searches enough that each has searched."""
    with serving({**os.environ, "SECRAG_DATABASE_URL": url}, "--workers", str(workers)) as (api, pid):
        for _ in range(workers * 8):
            post_json(f"{api}/v1/search", {"query": "credential dumping from lsass", "k": 10})
        # uvicorn's workers, not multiprocessing's resource tracker beside them
        pids = [p for p in children(pid) if b"resource_tracker" not in Path(f"/proc/{p}/cmdline").read_bytes()]
        rows = [[f"worker {p}", *memory_mb(p)] for p in sorted(pids)] + [["launcher", *memory_mb(pid)]]
        print_table(["process", "RSS MB", "PSS MB"], [[n, round(r), round(p)] for n, r, p in rows])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", help="the real store to grow from, nothing connected (default: the bench store)")
    ap.add_argument("--chunks", type=int, nargs="+", default=[0, 200_000, 1_000_000], help="0: the store as it is")
    ap.add_argument("--texts", choices=["copies", "mixed"], default="copies", help="near-duplicates or mixed notes")
    ap.add_argument("--queries", type=int, default=100, help="dev queries searched")
    ap.add_argument("--keep", action="store_true", help="keep the grown databases")
    ap.add_argument("--recall-ef", type=int, nargs="+", help="only the HNSW walk's recall@60 per ef_search")
    ap.add_argument("--api-memory", type=int, metavar="WORKERS", help="only the memory of each API worker")
    args = ap.parse_args()
    url = args.database_url or bench_store_url()
    texts = [item["query"] for item in load_items(DEV_QUERIES, args.queries)]
    if args.api_memory:
        api_memory(url, args.api_memory)
    elif args.recall_ef:
        recall_per_ef(url, texts, 60, args.recall_ef)
    else:
        for target in args.chunks:
            measure(url, target, args, texts)


if __name__ == "__main__":
    main()
