"""Retrieval quality per task and mode: nDCG@10, MRR@10, Recall@10 and P@1 over graded relevance judgements.

The API runs in process on the store (caches off). --without-own-documents measures the text tasks
(queries whose `origin` is a document of the store) on a copy without those documents (`<db>_without_own`,
made again each run). --vector-thresholds prints search.yaml's `vector_thresholds` per model and query shape:
the 1st percentile of each relevant document's best chunk cosine to its query, rounded down to 0.01.
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from psycopg import conninfo, sql

from secrag.db import database

from lib.api import in_process
from lib.queries import load_items
from lib.relevance import evaluate, means
from lib.table import print_table
from lib.timing import percentile

TEXT_TASKS = ("atomic_to_technique", "elastic_to_technique", "capec_to_technique")  # a document's text as query


def copy_without_own(url: str, items: list[dict[str, Any]]) -> str:
    """A copy of the store without the queries' own documents (their `origin`)."""
    store = str(conninfo.conninfo_to_dict(url)["dbname"])
    name = f"{store}_without_own"
    with database.connect(database.with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        # a template has no other session: end the store's own (an API on it reconnects)
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s"
                     " AND pid <> pg_backend_pid()", (store,))  # fmt: skip
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(store)))
    origins = sorted({item["origin"] for item in items if item.get("origin")})
    with database.connect(database.with_database(url, name), autocommit=True) as conn:
        deleted = conn.execute("DELETE FROM documents WHERE doc_id = ANY(%s)", (origins,)).rowcount
        conn.execute("ANALYZE")
    print(f"copy {name}: {deleted} of {len(origins)} own documents removed")
    return database.with_database(url, name)


def vector_thresholds(url: str, items: list[dict[str, Any]], models: list[str]) -> None:
    """Per model, the YAML of search.yaml's `vector_thresholds` (see the module's usage)."""
    import numpy as np

    from pipeline.indexing import embedding_input
    from secrag.db.queries import Queries
    from secrag.enrichment import enrich
    from secrag.files.package_data import sql_dir
    from secrag.models.encoders import document_encoder
    from secrag.settings import get_settings
    from serving.search.analysis import analyse
    from serving.search.encoder import shared_encoder

    relevant = sorted({r["doc_id"] for item in items for r in item["relevant"] if r["grade"] > 0})
    chunks: dict[str, list[str]] = defaultdict(list)
    with database.connect(url, autocommit=True) as conn:
        lookup = dict(conn.execute(Queries(sql_dir(), "serving").technique_names).fetchall())  # the API's
        rows = conn.execute("SELECT doc_id, title, enriched_text FROM chunks WHERE doc_id = ANY(%s) ORDER BY chunk_id",
                            [relevant])  # fmt: skip
        for doc_id, title, text in rows:
            chunks[doc_id].append(embedding_input(title, text))
    queries = [(analyse(item["query"]).query_type, enrich(item["query"].strip(), lookup), item) for item in items]
    models_dir = get_settings().models_dir
    print("vector_thresholds:")
    for model_id in models:
        encoder = shared_encoder(model_id, cache_dir=models_dir, cache_size=0)
        docs = document_encoder(model_id, batch_size=64, threads=0, cache_dir=models_dir)
        by_doc = {d: np.asarray(docs.encode_documents(chunks[d])) for d in relevant if chunks.get(d)}
        per_shape: dict[str, list[float]] = defaultdict(list)
        for shape, enriched, item in queries:
            query = np.asarray(encoder.encode(enriched), dtype=np.float32)
            for rel in item["relevant"]:
                if rel["grade"] > 0 and rel["doc_id"] in by_doc:
                    per_shape[shape].append(float(np.max(by_doc[rel["doc_id"]] @ query)))
        every = [c for v in per_shape.values() for c in v]
        chosen = {"default": every, **{s: v for s, v in sorted(per_shape.items()) if len(v) >= 20}}
        floors = ", ".join(f"{s}: {math.floor(percentile(v, 1) * 100) / 100}" for s, v in chosen.items())
        pairs = {shape: len(values) for shape, values in sorted(per_shape.items())}
        print(f"  {model_id}: {{{floors}}}  # pairs per shape: {pairs}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--database-url", required=True, help="The store.")
    ap.add_argument("--modes", default="hybrid,fts,vector,fuzzy")
    ap.add_argument("--search-config", type=Path, default=None, help="This search.yaml, not the shipped one.")
    ap.add_argument("--without-own-documents", action="store_true", help="The text tasks, without their own.")
    ap.add_argument("--group-by", choices=["task", "shape"], default="task", help="The table's rows.")
    ap.add_argument("--vector-thresholds", nargs="+", metavar="MODEL", help="Measure these models' thresholds.")
    args = ap.parse_args()
    items = load_items(args.queries)
    if args.vector_thresholds:
        vector_thresholds(args.database_url, items, args.vector_thresholds)
        return
    if args.without_own_documents:
        items = [item for item in items if item.get("task") in TEXT_TASKS]
        args.database_url = copy_without_own(args.database_url, items)
    dropped: dict[str, int] = {}
    with in_process(args.database_url, args.search_config) as api:
        scores, failures = evaluate(api, items, args.modes.split(","), {}, dropped, args.group_by)
    ordered = sorted(scores.items(), key=lambda kv: (kv[0][0] == "ALL", kv[0]))  # ALL last
    rows = [[task, mode, len(values), *(round(v, 3) for v in means(values))] for (task, mode), values in ordered]
    print_table(["task", "mode", "n", "nDCG@10", "MRR@10", "R@10", "P@1"], rows)
    if failures:
        print(f"{failures} requests failed (counted as empty rankings)")
    for mode, count in sorted(dropped.items()):
        print(f"{mode}: {count / len(items):.2f} vector candidates per query under the model's threshold")


if __name__ == "__main__":
    main()
