"""Cross-validated leg weights per query shape (serving/search/search.yaml `class_weights`).

    python bench/class_weights.py --database-url postgresql://...secrag_bench... \\
        [--queries ../shared/eval/dev_queries.jsonl] [--shape natural] [--leg neighbours] \\
        [--grid 0.5,1,1.5,2,3] [--folds 2]

For each weight of the grid, the hybrid nDCG@10 of every labelled query whose shape is --shape (the
other queries are unaffected by that shape's weight), with the shipped search.yaml plus that one
weight. Then k-fold cross-validation by query id: the weight is chosen on k-1 folds and scored on the
held-out fold. Prints the grid, the choice per fold, the held-out nDCG@10 of the chosen weight
against the shipped default on the same queries, and the spread over folds.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
from pathlib import Path
from typing import Any

import yaml
from quality import _in_process, load_items

from secrag.files.package_data import package_path
from serving.search.analysis import analyse

DEV = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev_queries.jsonl"


def per_query(url: str, items: list[dict[str, Any]], config: Path) -> list[float]:
    """Hybrid nDCG@10 of each item, in order, with `config` as search.yaml."""
    scores, _ = _in_process(url, items, ["hybrid"], {}, search_config=config)
    return [ndcg for ndcg, _mrr, _recall in scores[("ALL", "hybrid")]]


def fold_of(item: dict[str, Any], folds: int) -> int:
    key = f"secrag-fold:{item.get('qid') or item['query']}"  # salted: the qids themselves split dev from held-out
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % folds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--queries", type=Path, default=DEV)
    ap.add_argument("--shape", default="natural")
    ap.add_argument("--leg", default="neighbours", choices=["fts", "vec", "fuzzy", "label", "neighbours", "procedures"])
    ap.add_argument("--grid", default="0.5,1,1.5,2,3")
    ap.add_argument("--folds", type=int, default=2)
    args = ap.parse_args()
    items = [i for i in load_items(args.queries) if analyse(i["query"]).query_type == args.shape]
    shipped = yaml.safe_load(package_path("serving.search", "search.yaml").read_text()) or {}
    default = per_query(args.database_url, items, package_path("serving.search", "search.yaml"))
    grid = [float(w) for w in args.grid.split(",")]
    scores: dict[float, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for weight in grid:
            config = {**shipped, "class_weights": {**shipped.get("class_weights", {}), args.shape: {args.leg: weight}}}
            path = Path(tmp) / "search.yaml"
            path.write_text(yaml.safe_dump(config))
            scores[weight] = per_query(args.database_url, items, path)
    print(f"{len(items)} queries of shape {args.shape}; leg {args.leg}; shipped config: {statistics.mean(default):.3f}")
    for weight in grid:
        print(f"  weight {weight:>4}: nDCG@10 {statistics.mean(scores[weight]):.3f}")
    held_out = []
    for fold in range(args.folds):
        train = [i for i, item in enumerate(items) if fold_of(item, args.folds) != fold]
        test = [i for i, item in enumerate(items) if fold_of(item, args.folds) == fold]
        best = max(grid, key=lambda w: (statistics.mean(scores[w][i] for i in train), -abs(w - 1)))
        chosen = statistics.mean(scores[best][i] for i in test)
        base = statistics.mean(default[i] for i in test)
        held_out.append(chosen - base)
        print(f"fold {fold}: chose {best} on {len(train)} queries; held out {len(test)}: {chosen:.3f} vs {base:.3f}")
    print(
        f"held-out gain over the shipped config: mean {statistics.mean(held_out):+.3f}, "
        f"spread {min(held_out):+.3f}..{max(held_out):+.3f}"
    )


if __name__ == "__main__":
    main()
