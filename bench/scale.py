"""Sizing: synthetic stores of N chunks grown from a real one; index builds, sizes, memory and search latency.

Per N, `secrag_scale_<N>` is cloned from the store (nothing may be connected to it) and grown to about N
chunks with the HNSW, full-text and trigram indexes dropped, then rebuilt and timed: `copies` repeats every
document with noisy copies of its vectors (near-duplicates), `mixed` adds user-folder-like notes mixing two
real chunks' sentences and vectors. Printed: build times, sizes, the server's PSS and the in-process API's
p50/p99 per search shape. --recall-ef: the HNSW walk's recall@60 against exact cosine per ef_search.
--api-memory N: each worker's RSS and PSS under `secrag serve --workers N`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

from secrag.db import database

from lib.api import in_process
from lib.processes import children, memory_mb, serving
from lib.queries import DEV_QUERIES, load_items
from lib.store import bench_store_url
from lib.table import print_table
from lib.timing import percentile

GROWN_INDEXES = ("hnsw", "chunks_tsv_idx", "chunks_first_title_trgm_idx")
SHAPES: dict[str, dict[str, Any]] = {
    "hybrid": {"mode": "hybrid"},
    "hybrid, sources=[sigma]": {"mode": "hybrid", "filters": {"sources": ["sigma"]}},
    "vector": {"mode": "vector"},
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def columns(conn: psycopg.Connection, table: str) -> list[str]:
    """The table's columns a copy writes (not the generated ones)."""
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s"
        " AND is_generated = 'NEVER' ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return [r[0] for r in rows]


def copy_statement(conn: psycopg.Connection, table: str, replaced: dict[str, str], where: str) -> sql.Composed:
    cols = columns(conn, table)
    exprs = [sql.SQL(replaced[c]) if c in replaced else sql.Identifier(c) for c in cols]
    return sql.SQL("INSERT INTO {t} ({cols}) SELECT {exprs} FROM {t} WHERE {where}").format(
        t=sql.Identifier(table),
        cols=sql.SQL(", ").join(map(sql.Identifier, cols)),
        exprs=sql.SQL(", ").join(exprs),
        where=sql.SQL(where),
    )


def grow(conn: psycopg.Connection, model: str, base_chunks: int, target: int, noise: float) -> None:
    """Add copies of the original documents, chunks and vectors until about `target` chunks: whole
    copies, then a last copy of the share of documents (by a hash of their id) that is still missing."""
    suffix = "'~' || %(k)s::text"
    picked = "position('~' in doc_id) = 0 AND abs(hashtext(doc_id)) %% 10000 < %(share)s"
    half_width = noise * math.sqrt(3)  # uniform on [-w, w] has standard deviation w / sqrt(3)
    statements = [
        copy_statement(
            conn,
            "documents",
            {"doc_id": f"doc_id || {suffix}", "content_hash": f"content_hash || {suffix}"},
            picked,
        ),
        copy_statement(
            conn,
            "chunks",
            {
                "doc_id": f"doc_id || {suffix}",
                "chunk_id": f"doc_id || {suffix} || '#' || ordinal",
                "content_hash": f"content_hash || {suffix}",
            },
            picked,
        ),
        # Each new chunk's vector: its original's plus noise (the trigger chunk_vectors_on_embeddings
        # fills chunk_vectors).
        sql.SQL(
            "INSERT INTO embeddings (content_hash, model_id, vector) "
            "SELECT DISTINCT ON (c.content_hash) c.content_hash, e.model_id, "
            "l2_normalize((SELECT array_agg(x + %(w)s * (2 * random() - 1)) "
            "FROM unnest(e.vector::real[]) AS x)::vector) "
            "FROM chunks c JOIN embeddings e ON e.content_hash = split_part(c.content_hash, '~', 1) "
            "AND e.model_id = %(model)s WHERE c.doc_id LIKE '%%~' || %(k)s::text ORDER BY c.content_hash"
        ),
    ]
    count = "SELECT count(*) FROM chunks WHERE doc_id LIKE '%%~' || %(k)s::text"
    grow_in_rounds(conn, "copy", [*statements, count], {"w": half_width, "model": model}, base_chunks, target)


def grow_in_rounds(
    conn: psycopg.Connection, label: str, statements: list[Any], params: dict[str, Any], base: int, target: int
) -> None:
    """Run the statements once a round, each round in one transaction on the share of the documents still
    missing, until about `target` chunks; the last statement counts the round's chunks."""
    missing, k = target - base, 0
    while missing > 0:
        k += 1
        share = min(10000, math.ceil(10000 * missing / base))
        started = time.monotonic()
        with conn.transaction():
            for statement in statements[:-1]:
                conn.execute(statement, {**params, "k": k, "share": share})
            added = conn.execute(statements[-1], {**params, "k": k}).fetchone()[0]  # type: ignore[index]
        missing -= added
        log(f"{label} {k} ({share / 100:.1f} % of the documents): {added} chunks in {time.monotonic() - started:.1f}s")


MIXED_SOURCE = "synthetic_notes"


def grow_mixed(conn: psycopg.Connection, model: str, base_chunks: int, target: int) -> None:
    """Add user-folder-like documents until about `target` chunks, none a copy of another: each new chunk
    (in the public folder source `synthetic_notes`, no ATT&CK labels, no identifiers, as a team's own notes
    would be) mixes the sentences of two real chunks of different documents, shuffled, and its vector is
    the two chunks' vectors mixed in a random proportion (0.3 to 0.7), renormalised: a point between two
    real ones, not beside one (the model never embedded that text: the vector stands for what a mixed
    text's embedding would be near)."""
    conn.execute(
        "INSERT INTO sources (name, kind, description, category) VALUES (%s, 'user_folder', "
        "'bench/scale.py --texts mixed: synthetic notes', 'user') ON CONFLICT DO NOTHING",
        [MIXED_SOURCE],
    )
    conn.execute(
        "CREATE TEMP TABLE base_chunks AS SELECT row_number() OVER (ORDER BY chunk_id) AS rn, chunk_id, doc_id,"
        " ordinal, title, text, content_hash FROM chunks WHERE source <> %s",
        [MIXED_SOURCE],
    )
    conn.execute("CREATE INDEX ON base_chunks (rn)")
    picked = "position('~' in d.doc_id) = 0 AND d.source <> %(folder)s AND abs(hashtext(d.doc_id)) %% 10000 < %(share)s"
    statements = [
        "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash)"
        " SELECT %(folder)s || ':' || d.doc_id || '~' || %(k)s::text, %(folder)s, 'synthetic',"
        " d.title || ' (notes)', '', d.content_hash || '~' || %(k)s::text FROM documents d WHERE " + picked,
        # the partner chunk: another base chunk picked by a hash of this one's id and the round
        "INSERT INTO chunks (chunk_id, doc_id, source, ordinal, title, text, enriched_text, content_hash)"
        " SELECT n.doc_id || '#' || b.ordinal, n.doc_id, %(folder)s, b.ordinal, b.title, m.text, m.text,"
        " 'mix:' || b.content_hash || ':' || p.content_hash || ':' || %(k)s::text || ':' || b.chunk_id"
        " FROM base_chunks b JOIN documents d ON d.doc_id = b.doc_id"
        " CROSS JOIN LATERAL (SELECT %(folder)s || ':' || d.doc_id || '~' || %(k)s::text AS doc_id) n"
        " JOIN base_chunks p ON p.rn = 1 + abs(hashtext(b.chunk_id || '~' || %(k)s::text)) %% %(base)s"
        " CROSS JOIN LATERAL (SELECT string_agg(s, '. ' ORDER BY md5(s || b.chunk_id)) AS text"
        "   FROM unnest(regexp_split_to_array(b.text || ' ' || p.text, '[.]\\s+')) s) m"
        " WHERE " + picked,
        "INSERT INTO embeddings (content_hash, model_id, vector)"
        " SELECT c.content_hash, %(model)s, l2_normalize("
        "   e1.vector * array_fill(w.a, ARRAY[vector_dims(e1.vector)])::vector"
        "   + e2.vector * array_fill(1 - w.a, ARRAY[vector_dims(e1.vector)])::vector)"
        " FROM chunks c"
        " CROSS JOIN LATERAL (SELECT (0.3 + 0.4 * (abs(hashtext(c.content_hash)) %% 1000) / 1000.0)::real AS a) w"
        " JOIN embeddings e1 ON e1.content_hash = split_part(c.content_hash, ':', 2) AND e1.model_id = %(model)s"
        " JOIN embeddings e2 ON e2.content_hash = split_part(c.content_hash, ':', 3) AND e2.model_id = %(model)s"
        " WHERE c.source = %(folder)s AND c.doc_id LIKE '%%~' || %(k)s::text",
    ]
    statements.append("SELECT count(*) FROM chunks WHERE source = %(folder)s AND doc_id LIKE '%%~' || %(k)s::text")
    params = {"model": model, "folder": MIXED_SOURCE, "base": base_chunks}
    grow_in_rounds(conn, "mixed round", statements, params, base_chunks, target)


def server_pss_mb(conn: psycopg.Connection) -> float:
    """Proportional set size of the server's processes (the postmaster and its children), in MB."""
    data_dir = Path(conn.execute("SELECT current_setting('data_directory')").fetchone()[0])  # type: ignore[index]
    postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for pid in [postmaster, *children(postmaster)]:
        try:
            total += memory_mb(pid)[1]
        except OSError:
            continue  # a backend that ended meanwhile
    return total


def relation_mb(conn: psycopg.Connection, name: str) -> float:
    return float(conn.execute("SELECT pg_total_relation_size(%s::regclass) / 1048576.0", [name]).fetchone()[0])  # type: ignore[index]


def build_indexes(conn: psycopg.Connection, definitions: dict[str, str]) -> dict[str, float]:
    seconds = {}
    for name, definition in definitions.items():
        started = time.monotonic()
        conn.execute(definition)  # type: ignore[arg-type]
        seconds[name] = time.monotonic() - started
        log(f"built {name} in {seconds[name]:.1f}s ({relation_mb(conn, name):.0f} MB)")
    return seconds


def search_latency(url: str, texts: list[str], k: int) -> dict[str, tuple[float, float, int]]:
    """p50/p99 in ms of POST /v1/search per shape, the API in process (caches off), after one warm pass,
    and how many requests failed (a 504 when a statement outlives the reader's statement timeout; its
    time counts too)."""
    figures = {}
    with in_process(url) as api:
        for shape, body in SHAPES.items():
            times, failed = [], 0
            for timed in (False, True):
                for text in texts:
                    started = time.perf_counter()
                    response = api.post("/v1/search", json={"query": text, "k": k, **body})
                    if timed:
                        times.append((time.perf_counter() - started) * 1000)
                        failed += response.status_code != 200
            figures[shape] = (percentile(times, 50), percentile(times, 99), failed)
    return figures


def recall_per_ef(url: str, texts: list[str], k: int, efs: list[int], source: str | None) -> None:
    """Recall@k of the vector leg's HNSW walk against exact cosine (a sequential scan), and the statement's
    p50/p99, per hnsw.ef_search; `source` filters both to one source as the vector leg does."""
    from pgvector.psycopg import register_vector

    from serving.search.encoder import shared_encoder

    with database.connect(url, autocommit=True) as conn:
        register_vector(conn)
        model = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()[0]  # type: ignore[index]
        encoder = shared_encoder(model, 1, backend="onnx", encoder_threads=1, cache_size=0)
        vectors = [encoder.encode(t) for t in texts]
        where = sql.SQL("AND c.source = {}").format(sql.Literal(source)) if source else sql.SQL("")
        statement = sql.SQL(
            "SELECT c.chunk_id FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash "
            "WHERE e.model_id = {model} {where} ORDER BY e.vector::vector({d}) <=> %(q)s::vector({d}) LIMIT %(k)s"
        ).format(model=sql.Literal(model), where=where, d=sql.Literal(encoder.dimensions))
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute("SET jit = off")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET enable_indexscan = off")
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
    print(f"model {model}, {len(vectors)} dev queries, recall@{k}{f', source {source}' if source else ''}")
    print_table(["ef_search", "recall", "min", "p50 ms", "p99 ms"], rows)


def measure(server_url: str, base: str, target: int, args: argparse.Namespace, texts: list[str]) -> dict[str, Any]:
    name = f"secrag_scale_{target}" + ("_mixed" if args.texts == "mixed" else "")
    admin = database.with_database(server_url, "postgres")
    with database.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None
        reuse = args.reuse and exists
        if not reuse:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            started = time.monotonic()
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(base)))
            log(f"cloned {base} into {name} in {time.monotonic() - started:.1f}s")
    url = database.with_database(server_url, name)
    result: dict[str, Any] = {"target": target, "grow_s": 0.0, "index_s": {}}
    with database.connect(url, autocommit=True) as conn:
        model = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()[0]  # type: ignore[index]
        indexes = [
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"
                " AND (indexname IN ('chunks_tsv_idx', 'chunks_first_title_trgm_idx')"
                "      OR (indexdef LIKE '%%USING hnsw%%' AND indexdef LIKE '%%' || %s || '''%%'))",
                [model],
            )
        ]
        # Index builds with the memory to keep the graph in memory.
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(args.maintenance_work_mem)))
        conn.execute(sql.SQL("SET max_parallel_maintenance_workers = {}").format(sql.Literal(args.parallel_workers)))
        if reuse:
            log(f"{name}: measured as it is (--reuse)")
        else:
            conn.execute("DELETE FROM chunk_vectors WHERE model_id <> %s", [model])
            conn.execute("DELETE FROM embeddings WHERE model_id <> %s", [model])
            definitions = dict(
                conn.execute(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)", [indexes]
                ).fetchall()
            )
            for index in definitions:
                conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
            base_chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
            log(f"{name}: {base_chunks} chunks of model {model}; growing to about {target}")
            started = time.monotonic()
            if args.texts == "mixed":
                grow_mixed(conn, model, base_chunks, target)
            else:
                grow(conn, model, base_chunks, target, args.noise)
            result["grow_s"] = time.monotonic() - started
            conn.execute("VACUUM ANALYZE")
            result["index_s"] = build_indexes(conn, definitions)
        result["chunks"] = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
        result["documents"] = conn.execute("SELECT count(*) FROM documents").fetchone()[0]  # type: ignore[index]
        result["cosine_to_original"] = conn.execute(  # NULL: no copies
            "SELECT avg(1 - (c.vector <=> o.vector)) FROM (SELECT content_hash, vector FROM embeddings"
            " WHERE content_hash LIKE '%%~%%' LIMIT 2000) c JOIN embeddings o"
            " ON o.content_hash = split_part(c.content_hash, '~', 1) AND o.model_id = %s",
            [model],
        ).fetchone()[0]  # type: ignore[index]
        result["sizes_mb"] = {
            "database": float(conn.execute("SELECT pg_database_size(current_database()) / 1048576.0").fetchone()[0]),  # type: ignore[index]
            **{i: relation_mb(conn, i) for i in indexes},
            "embeddings (heap)": float(conn.execute("SELECT pg_relation_size('embeddings') / 1048576.0").fetchone()[0]),  # type: ignore[index]
            "chunk_vectors (heap)": float(
                conn.execute("SELECT pg_relation_size('chunk_vectors') / 1048576.0").fetchone()[0]  # type: ignore[index]
            ),
            "chunks (with toast)": relation_mb(conn, "chunks"),
        }
        result["latency_ms"] = search_latency(url, texts, args.k)
        for shape, (p50, p99, failed) in result["latency_ms"].items():
            log(f"search {shape}: p50 {p50:.1f} ms, p99 {p99:.1f} ms, {failed} failed")
        result["server_pss_mb"] = server_pss_mb(conn)
        result["shared_buffers"] = conn.execute("SELECT current_setting('shared_buffers')").fetchone()[0]  # type: ignore[index]
    if not args.keep:
        with database.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return result


def report(result: dict[str, Any]) -> None:
    print(f"\n== {result['chunks']:,} chunks, {result['documents']:,} documents (target {result['target']:,})")
    cosine = result["cosine_to_original"]
    similarity = f"mean cosine of a copy to its original {cosine:.3f}" if cosine is not None else "no copies"
    print(f"grown in {result['grow_s']:.0f}s; {similarity}")
    pss, buffers = result["server_pss_mb"], result["shared_buffers"]
    print(f"server PSS after the searches: {pss:.0f} MB (shared_buffers {buffers})")
    sizes = [
        [name, round(mb), round(result["index_s"][name], 1) if name in result["index_s"] else None]
        for name, mb in result["sizes_mb"].items()
    ]
    print_table(["relation", "MB", "index build s"], sizes)
    latency = [[shape, round(p50, 1), round(p99, 1), n] for shape, (p50, p99, n) in result["latency_ms"].items()]
    print_table(["search", "p50 ms", "p99 ms", "failed"], latency)


def api_memory(url: str, workers: int) -> None:
    """Resident and proportional set size of each worker of `secrag serve --workers N` on the store at `url`,
    after enough searches that each has encoded a query and searched."""
    import os

    with serving({**os.environ, "SECRAG_DATABASE_URL": url}, "--workers", str(workers)) as (api, pid):
        with httpx.Client(base_url=api, timeout=30) as http:
            for _ in range(workers * 8):  # spread over the workers
                http.post("/v1/search", json={"query": "credential dumping from lsass", "k": 10})
        # uvicorn's workers, not multiprocessing's resource tracker beside them
        pids = [p for p in children(pid) if b"resource_tracker" not in Path(f"/proc/{p}/cmdline").read_bytes()]
        rows = [[f"worker {p}", *memory_mb(p)] for p in sorted(pids)] + [["launcher", *memory_mb(pid)]]
        print_table(["process", "RSS MB", "PSS MB"], [[n, round(r), round(p)] for n, r, p in rows])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", help="the real store to grow from, nothing connected (default: the bench store)")
    ap.add_argument(
        "--chunks", type=int, nargs="+", default=[0, 200_000, 1_000_000], help="targets; 0: the real store as it is"
    )
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--noise", type=float, default=0.015, help="per-dimension standard deviation of a copy's noise")
    ap.add_argument("--maintenance-work-mem", default="4GB")
    ap.add_argument("--parallel-workers", type=int, default=1)
    ap.add_argument("--query-file", type=Path, default=DEV_QUERIES)
    ap.add_argument(
        "--texts",
        choices=["copies", "mixed"],
        default="copies",
        help="copies: each document copied with noisy vectors (near-duplicates); mixed: new user-folder-like "
        "documents, each chunk two real chunks' sentences shuffled, its vector between theirs (secrag_scale_<N>_mixed)",
    )
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="measure a kept secrag_scale_<N> as it is")
    ap.add_argument("--recall-k", type=int, default=60, help="k of --recall-ef (the API's vector candidates)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--recall-ef", type=int, nargs="+", help="only the HNSW walk's recall per ef_search")
    ap.add_argument("--source", help="with --recall-ef: filtered to this source")
    ap.add_argument("--api-memory", type=int, metavar="WORKERS", help="only the memory of each API worker")
    args = ap.parse_args()
    args.database_url = args.database_url or bench_store_url()
    texts = [item["query"] for item in load_items(args.query_file, args.queries)]
    if args.api_memory:
        api_memory(args.database_url, args.api_memory)
        return
    if args.recall_ef:
        recall_per_ef(args.database_url, texts, args.recall_k, args.recall_ef, args.source)
        return
    base = args.database_url.split("?")[0].rsplit("/", 1)[1]
    results = []
    for target in args.chunks:
        results.append(measure(args.database_url, base, target, args, texts))
        report(results[-1])
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
