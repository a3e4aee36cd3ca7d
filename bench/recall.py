"""Recall of the vector leg's HNSW walk against exact cosine, and its time, per hnsw.ef_search.

    python bench/recall.py --database-url postgresql://...secrag_scale_1000000... [--ef 60 100 200 400 800]
        [--queries 50] [--k 60] [--source sigma]

The first `--queries` dev queries are encoded with the active model. For each, the exact nearest `--k`
chunks (a sequential scan: index scans off) are the truth; then the HNSW index answers the same
statement at each ef_search, and the mean recall@k and the p50/p99 of the statement are printed.
`--source` filters both to one source the way the vector leg does (through chunks.source, pgvector's
iterative scan on), so the figures show what a one-source filter costs at this size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from pgvector.psycopg import register_vector
from psycopg import sql

from secrag.db import database
from serving.search.encoder import shared_encoder

QUERIES = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev_queries.jsonl"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--ef", type=int, nargs="+", default=[60, 100, 200, 400, 800])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=60)
    ap.add_argument("--source", default=None)
    ap.add_argument("--query-file", type=Path, default=QUERIES)
    args = ap.parse_args()
    texts = [json.loads(line)["query"] for line in args.query_file.read_text().splitlines() if line.strip()]
    with database.connect(args.database_url, autocommit=True) as conn:
        register_vector(conn)
        model = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()[0]  # type: ignore[index]
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
        encoder = shared_encoder(model, 1, backend="onnx", encoder_threads=1, cache_size=0)
        vectors = [encoder.encode(t) for t in texts[: args.queries]]
        dims = encoder.dimensions
        source = sql.SQL("AND c.source = {}").format(sql.Literal(args.source)) if args.source else sql.SQL("")
        statement = sql.SQL(
            "SELECT c.chunk_id FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash "
            "WHERE e.model_id = {model} {source} "
            "ORDER BY e.vector::vector({d}) <=> %(q)s::vector({d}) LIMIT %(k)s"
        ).format(model=sql.Literal(model), source=source, d=sql.Literal(dims))
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute("SET jit = off")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET enable_indexscan = off")
        started = time.monotonic()
        truth = [{r[0] for r in conn.execute(statement, {"q": v, "k": args.k})} for v in vectors]
        exact_ms = (time.monotonic() - started) * 1000 / len(vectors)
        conn.execute("RESET enable_indexscan")
        where = f", source {args.source}" if args.source else ""
        print(f"{chunks:,} chunks, model {model}, {len(vectors)} dev queries, recall@{args.k}{where}")
        print(f"exact (sequential scan): {exact_ms:.1f} ms a query")
        print(f"{'ef_search':>9} {'recall':>7} {'min':>6} {'p50 ms':>7} {'p99 ms':>7}")
        for ef in args.ef:
            conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef)))
            for v in vectors[:3]:  # warm
                conn.execute(statement, {"q": v, "k": args.k}).fetchall()
            times, recalls = [], []
            for v, expected in zip(vectors, truth, strict=True):
                t0 = time.perf_counter()
                found = {r[0] for r in conn.execute(statement, {"q": v, "k": args.k})}
                times.append((time.perf_counter() - t0) * 1000)
                recalls.append(len(found & expected) / max(1, len(expected)))
            print(
                f"{ef:>9} {statistics.mean(recalls):>7.3f} {min(recalls):>6.2f} "
                f"{statistics.median(times):>7.1f} {percentile(times, 0.99):>7.1f}"
            )


if __name__ == "__main__":
    main()
