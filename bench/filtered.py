"""PostgreSQL time of the vector leg with a single-source filter, per way of finding the k nearest chunks.

    python bench/filtered.py --database-url postgresql://...secrag_bench... [--queries N] [--k 60]

Encodes the first N dev queries once with the active model, then runs the vector leg's statement (the
one the API composes: serving/search/statements.py) on one connection with the reader's session settings, for
no filter and one source each (sigma, mitre_attack, splunk_security by default), in each way:

- `hnsw`: the model's HNSW index with pgvector's iterative scan (relaxed order) and the filter;
- `exact`: exact distances over the filtered chunks (leg_vec_exact);
- `auto`: the choice the API makes (serving/search/leg_shapes.py: exact below EXACT_VECTOR_MAX_CHUNKS).

Prints p50/p95 of the statement's time as the client sees it (local socket), recall@k against exact
distances, and the fewest rows any query returned (never fewer than k when k exist).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from pgvector.psycopg import register_vector

from secrag.db import database
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.access.keys import ANONYMOUS
from serving.access.sessions import DEFAULT_EF_SEARCH
from serving.search.encoder import shared_encoder
from serving.search.leg_shapes import EXACT_VECTOR_MAX_CHUNKS
from serving.search.statements import compose

DEFAULT_SOURCES = ("sigma", "mitre_attack", "splunk_security")
QUERIES = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev_queries.jsonl"


def params(qvec: Any, sources: list[str] | None, k: int) -> dict[str, Any]:  # noqa: ANN401
    return {
        **ANONYMOUS.params(),
        "sources": sources,
        "doc_ids": None,
        "techniques": None,
        "platforms": None,
        "tags_any": None,
        "tags_all": None,
        "updated_after": None,
        "updated_before": None,
        "created_after": None,
        "created_before": None,
        "doc_filters": False,
        "fts_text": "",
        "ident_text": "",
        "has_ident": False,
        "ident_tier": False,
        "pool_fts": False,
        "qvec": qvec,
        "vec_k": k,
    }


def run(conn: Any, statement: str, vectors: list[Any], sources: list[str] | None, k: int) -> tuple[list, list]:  # noqa: ANN401
    times, results = [], []
    conn.execute(statement, params(vectors[0], sources, k)).fetchall()  # warm
    for qvec in vectors:
        started = time.perf_counter()
        rows = conn.execute(statement, params(qvec, sources, k)).fetchall()
        times.append((time.perf_counter() - started) * 1000)
        results.append([r[1] for r in rows])
    return times, results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--k", type=int, default=60, help="vec_k (the API's default vector candidates)")
    ap.add_argument("--sources", nargs="*", default=list(DEFAULT_SOURCES))
    ap.add_argument("--query-file", type=Path, default=QUERIES)
    args = ap.parse_args()
    q = Queries(sql_dir(), "serving")
    texts = [json.loads(line)["query"] for line in args.query_file.read_text().splitlines() if line.strip()]
    texts = texts[: args.queries]
    with database.connect(args.database_url, autocommit=True) as conn:
        register_vector(conn)
        model = conn.execute(q.active_model).fetchone()[0]
        encoder = shared_encoder(model, 1, backend="onnx", encoder_threads=1, cache_size=0)
        vectors = [encoder.encode(t) for t in texts]
        statements = compose(q, encoder.model_id, encoder.dimensions)
        conn.execute(
            "SELECT set_config('plan_cache_mode', 'force_custom_plan', false), set_config('jit', 'off', false),"
            " set_config('hnsw.iterative_scan', 'relaxed_order', false),"
            " set_config('hnsw.max_scan_tuples', '50000', false),"
            " set_config('hnsw.ef_search', %s, false)",
            (str(max(DEFAULT_EF_SEARCH, args.k)),),
        )
        counts = dict(conn.execute("SELECT source, count(*) FROM chunks GROUP BY source").fetchall())
        print(f"model {model}, {len(texts)} queries, k={args.k}, exact below {EXACT_VECTOR_MAX_CHUNKS} chunks")
        print(f"{'filter':<18}{'chunks':>8}  {'way':<6}{'p50 ms':>9}{'p95 ms':>9}{'recall':>8}{'min rows':>9}")
        for source in [None, *args.sources]:
            sources = [source] if source else None
            _, truth = run(conn, statements.vec_exact, vectors, sources, args.k)
            n = counts.get(source, 0) if source else sum(counts.values())
            ways = {"hnsw": statements.vec, "exact": statements.vec_exact}
            auto = "exact" if source and n <= EXACT_VECTOR_MAX_CHUNKS else "hnsw"
            for way, statement in ways.items():
                times, found = run(conn, statement, vectors, sources, args.k)
                recall = statistics.mean(
                    len(set(f) & set(t)) / max(1, len(t)) for f, t in zip(found, truth, strict=True)
                )
                p95 = sorted(times)[int(0.95 * (len(times) - 1))]
                label = f"{way}{'*' if way == auto else ''}"
                print(
                    f"{source or '(none)':<18}{n:>8}  {label:<6}{statistics.median(times):>9.2f}{p95:>9.2f}"
                    f"{recall:>8.3f}{min(len(f) for f in found):>9}"
                )
        print("* the way the API takes for this filter")


if __name__ == "__main__":
    main()
