"""Per model and query class, the cosine similarity under which the vector leg's candidates are dropped
(serving/search/search.yaml `vector_thresholds`), measured on the labelled dev queries.

    python bench/vector_thresholds.py --database-url URL --queries ../shared/eval/dev_queries.jsonl \
        [--models all-MiniLM-L6-v2-int8 all-MiniLM-L6-v2] [--percentile 0.01] [--min-pairs 20]

For every dev query and each of its relevant documents, the document's best chunk cosine to the query
(as the vector leg sees it: the ATT&CK-enriched query, each chunk's embedding input) is computed with each
model: queries with the serving encoder, chunks with the pipeline's document encoder (no stored vectors
are needed, so a model the store has not embedded is measured too). Per query class (the query shape of
serving/contract/query_classes.py) the threshold is the `percentile` of those cosines, rounded down to 0.01: about
one relevant document in a hundred loses its vector-leg vote (it keeps its other legs). A class with
fewer than `min-pairs` pairs gets the model's threshold over all classes (`default`).

For the model whose vectors the store holds, it also prints how many of the vector leg's 60 nearest
candidates per query (no filters) each threshold would drop. Prints JSON, then the YAML to paste.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plans import percentile as nearest_rank  # noqa: E402
from quality import load_items  # noqa: E402

from pipeline.indexing import embedding_input  # noqa: E402
from secrag.db import database  # noqa: E402
from secrag.db.queries import Queries  # noqa: E402
from secrag.enrichment import enrich  # noqa: E402
from secrag.files.package_data import sql_dir  # noqa: E402
from secrag.models.encoders import document_encoder  # noqa: E402
from secrag.settings import get_settings  # noqa: E402
from serving.search.analysis import analyse  # noqa: E402
from serving.search.encoder import shared_encoder  # noqa: E402

VEC_K = 60


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..1) the API's latency figures use."""
    found = nearest_rank(sorted(values), q * 100)
    assert found is not None  # every class measured has pairs
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--models", nargs="+", default=["all-MiniLM-L6-v2-int8", "all-MiniLM-L6-v2"])
    parser.add_argument("--percentile", type=float, default=0.01)
    parser.add_argument("--min-pairs", type=int, default=20)
    args = parser.parse_args()

    items = load_items(args.queries)
    with database.connect(args.database_url, autocommit=True) as conn:
        lookup = dict(conn.execute(Queries(sql_dir(), "serving").technique_names).fetchall())  # the API's
        relevant_ids = sorted({r["doc_id"] for item in items for r in item["relevant"] if r["grade"] > 0})
        chunks: dict[str, list[str]] = defaultdict(list)
        for doc_id, title, text in conn.execute(
            "SELECT doc_id, title, enriched_text FROM chunks WHERE doc_id = ANY(%s) ORDER BY chunk_id", [relevant_ids]
        ):
            chunks[doc_id].append(embedding_input(title, text))
        stored = {row[0] for row in conn.execute("SELECT DISTINCT model_id FROM embeddings")}
    queries = [(analyse(item["query"]).query_type, enrich(item["query"].strip(), lookup), item) for item in items]
    settings = get_settings()
    report: dict[str, Any] = {"queries": len(items), "percentile": args.percentile, "models": {}}
    yaml_lines = ["vector_thresholds:"]
    for model_id in args.models:
        encoder = shared_encoder(model_id, cache_dir=settings.models_dir, cache_size=0)
        docs = document_encoder(model_id, batch_size=64, threads=0, cache_dir=settings.models_dir)
        texts = [t for doc_id in relevant_ids for t in chunks.get(doc_id, [])]
        vectors = docs.encode_documents(texts)
        by_doc: dict[str, np.ndarray] = {}
        start = 0
        for doc_id in relevant_ids:
            n = len(chunks.get(doc_id, []))
            if n:
                by_doc[doc_id] = vectors[start : start + n]
            start += n
        per_class: dict[str, list[float]] = defaultdict(list)
        qvecs = {}
        for shape, enriched, item in queries:
            qvec = np.asarray(encoder.encode(enriched), dtype=np.float32)
            qvecs[item["qid"]] = qvec
            for rel in item["relevant"]:
                doc = by_doc.get(rel["doc_id"])
                if rel["grade"] > 0 and doc is not None:
                    per_class[shape].append(float(np.max(doc @ qvec)))
        every = [c for values in per_class.values() for c in values]
        default = math.floor(percentile(every, args.percentile) * 100) / 100
        classes = {}
        for shape, values in sorted(per_class.items()):
            enough = len(values) >= args.min_pairs
            chosen = math.floor(percentile(values, args.percentile) * 100) / 100 if enough else None
            classes[shape] = {
                "pairs": len(values),
                "min": round(min(values), 4),
                "p01": round(percentile(values, 0.01), 4),
                "p05": round(percentile(values, 0.05), 4),
                "median": round(percentile(values, 0.5), 4),
                "threshold": chosen,
            }
        figures: dict[str, Any] = {"pairs": len(every), "default": default, "classes": classes}
        if model_id in stored:
            figures["dropped_of_top60"] = _dropped(args.database_url, model_id, queries, qvecs, default, classes)
        report["models"][model_id] = figures
        chosen_classes = ", ".join(f"{s}: {c['threshold']}" for s, c in classes.items() if c["threshold"] is not None)
        yaml_lines.append(f"  {model_id}: {{default: {default}{', ' + chosen_classes if chosen_classes else ''}}}")
    print(json.dumps(report, indent=2))
    print("\n".join(yaml_lines))


def _dropped(
    url: str,
    model_id: str,
    queries: list[tuple[str, str, dict[str, Any]]],
    qvecs: dict[str, np.ndarray],
    default: float,
    classes: dict[str, dict[str, Any]],
) -> dict[str, float]:
    """Mean count of the vector leg's 60 nearest chunks (exact, unfiltered) under the class's threshold."""
    from pgvector.psycopg import register_vector

    dropped, total = 0, 0
    with database.connect(url, autocommit=True) as conn:
        register_vector(conn)
        dims = len(next(iter(qvecs.values())))
        for shape, _, item in queries:
            threshold = classes.get(shape, {}).get("threshold") or default
            rows = conn.execute(
                f"SELECT 1 - (vector::vector({dims}) <=> %s::vector({dims})) FROM embeddings WHERE model_id = %s"
                f" ORDER BY vector::vector({dims}) <=> %s::vector({dims}) LIMIT {VEC_K}",
                [qvecs[item["qid"]], model_id, qvecs[item["qid"]]],
            ).fetchall()
            dropped += sum(1 for (cos,) in rows if cos < threshold)
            total += 1
    return {"mean_dropped_per_query": round(dropped / max(1, total), 2), "of": VEC_K}


if __name__ == "__main__":
    main()
