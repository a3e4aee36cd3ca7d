"""Every leg's score and rank of each result of labelled queries (hybrid, k results), saved for tuning the
fusion offline: which legs, weighed how, rank the relevant documents first.

    python bench/leg_scores.py --database-url postgresql://... --queries ../shared/eval/cti_dev_queries.jsonl \
        --out .secrag/quality/legs.json [--k 50]

The API runs in process (caches off). Each line of the output is a query with its grades and its results'
legs: {"qid", "task", "grades": {doc_id: grade}, "results": [{"doc_id", "score", "legs": {leg: [score, rank]}}]}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from quality import api_settings, load_items


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--k", type=int, default=50)
    args = ap.parse_args()
    from fastapi.testclient import TestClient

    from serving.api.app import create_app

    items = load_items(args.queries)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with TestClient(create_app(api_settings(args.database_url))) as api, args.out.open("w") as out:
        for item in items:
            body = {
                "query": item["query"][:8000],
                "k": args.k,
                "filters": {k: v for k, v in (item.get("filters") or {}).items() if v},
                "return": {"snippets": False},
            }
            response = api.post("/v1/search", json=body)
            response.raise_for_status()
            results = [
                {
                    "doc_id": r["doc_id"],
                    "score": r["score"],
                    "legs": {leg: [s["score"], s["rank"]] for leg, s in r["scores"].items() if s},
                }
                for r in response.json()["results"]
            ]
            grades = {r["doc_id"]: int(r.get("grade", 1)) for r in item["relevant"]}
            line = {"qid": item["qid"], "task": item["task"], "shape": response.json()["query_type"]}
            out.write(json.dumps({**line, "grades": grades, "results": results}) + "\n")
    print(f"{len(items)} queries -> {args.out}")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
