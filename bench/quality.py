"""Retrieval quality per task and mode: nDCG@10, MRR@10, Recall@10 and P@1 over graded relevance judgements.

    python bench/quality.py --queries ../shared/eval/dev_queries.jsonl --url http://127.0.0.1:8000
    python bench/quality.py --queries ../shared/eval/dev_queries.jsonl --database-url postgresql://... \
        [--save runs/after.json] [--baseline runs/before.json] [--search-config my-search.yaml]

With --database-url the API runs in process (caches off). --without-own-documents measures the text tasks
(a pasted Atomic test, Elastic rule or CAPEC pattern: queries whose `origin` is a document of the store) on a
copy of the store without each query's own document, so the query is a text the store has never seen:
the copy (`<database>_without_own`, made from the store as a template, then the origins deleted) is kept
for the next run and re-made with --fresh-copy. Every run is saved (default
.secrag/quality/last.json) and compared with the previous one (or --baseline): the table's last
column is the nDCG@10 delta of each task and mode, so every ranking change shows what it did.
Each line: {"task", "query", "filters": {"sources": [...]}, "relevant": [{"doc_id", "grade"}], "qid"}.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Protocol

import httpx

K = 10
LAST_RUN = Path(".secrag/quality/last.json")


def ndcg(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    dcg = sum((2 ** grades.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def mrr(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    for i, d in enumerate(ranked[:k]):
        if grades.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def recall(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    relevant = {d for d, g in grades.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def precision_at_1(ranked: list[str], grades: dict[str, int]) -> float:
    """1 when the first result is relevant (any grade), else 0."""
    return 1.0 if ranked and grades.get(ranked[0], 0) > 0 else 0.0


Scores = dict[tuple[str, str], list[tuple[float, float, float, float]]]


class Poster(Protocol):
    """An HTTP client of the API (httpx.Client, or FastAPI's TestClient for an API in process)."""

    def post(self, url: str, *, json: Any) -> Any: ...  # noqa: ANN401


def load_items(path: Path, limit: int = 0) -> list[dict[str, Any]]:
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return items[:limit] if limit else items


def evaluate(
    http: Poster,
    items: list[dict[str, Any]],
    modes: list[str],
    extra: dict[str, Any],
    dropped: dict[str, int] | None = None,
    group_by: str = "task",
) -> tuple[Scores, int]:
    """nDCG@10, MRR@10, Recall@10 and P@1 per (task, mode) and overall ("ALL"); and the failed requests.
    `dropped` adds up, per mode, the vector candidates under the serving model's threshold."""
    scores: Scores = defaultdict(list)
    failures = 0
    for item in items:
        grades = {r["doc_id"]: int(r.get("grade", 1)) for r in item["relevant"]}
        for mode in modes:
            body = {
                "query": item["query"][:8000],
                "mode": mode,
                "k": K,
                "filters": {k: v for k, v in (item.get("filters") or {}).items() if v},
                "return": {"snippets": False},
                **extra,
            }
            response = http.post("/v1/search", json=body)
            if response.status_code != 200:
                failures += 1
                ranked: list[str] = []
            else:
                ranked = [r["doc_id"] for r in response.json()["results"]]
                if dropped is not None:
                    dropped[mode] = dropped.get(mode, 0) + response.json().get("below_vector_threshold", 0)
            result = (ndcg(ranked, grades), mrr(ranked, grades), recall(ranked, grades), precision_at_1(ranked, grades))
            scores[(group_of(item, group_by), mode)].append(result)
            scores[("ALL", mode)].append(result)
    return scores, failures


# The tasks whose query is the text of a document of the store (its `origin`).
TEXT_TASKS = ("atomic_to_technique", "elastic_to_technique", "capec_to_technique")


def copy_without_own(url: str, items: list[dict[str, Any]], *, fresh: bool = False) -> str:
    """A copy of the store at `url` without the queries' own documents (their `origin`), made once."""
    from psycopg import conninfo, sql

    from secrag.db import database

    store = str(conninfo.conninfo_to_dict(url)["dbname"])
    name = f"{store}_without_own"
    copy = database.with_database(url, name)
    admin = database.with_database(url, "postgres")
    with database.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and not fresh:
            return copy
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        source = sql.Identifier(store)
        # a template must have no other session: end the store's own (an API on it reconnects)
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (store,),
        )
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), source))
    origins = sorted({item["origin"] for item in items if item.get("origin")})
    with database.connect(copy, autocommit=True) as conn:
        deleted = conn.execute("DELETE FROM documents WHERE doc_id = ANY(%s)", (origins,)).rowcount
        conn.execute("ANALYZE")
    print(f"copy {name}: {deleted} of {len(origins)} own documents removed")
    return copy


def group_of(item: dict[str, Any], group_by: str) -> str:
    """The row of the table a query counts in: its task, its query shape (serving/search/analysis.py), or
    its length in words (1-4, 5-9, 10-19, 20+)."""
    if group_by == "shape":
        from serving.search.analysis import classify

        return f"{item.get('task', 'all')}/{classify(item['query'])}"
    if group_by == "words":
        n = len(item["query"].split())
        bucket = "1-4" if n < 5 else "5-9" if n < 10 else "10-19" if n < 20 else "20+"
        return f"{item.get('task', 'all')}/{bucket} words"
    return str(item.get("task", "all"))


def means(values: list[tuple[float, float, float, float]]) -> list[float]:
    return [sum(v[i] for v in values) / len(values) for i in range(4)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--modes", default="hybrid,fts,vector,fuzzy")
    parser.add_argument("--limit", type=int, default=0, help="Only the first N queries (0 = all).")
    parser.add_argument("--api-key", default=None)
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="Extra request field, e.g. --param w_fuzzy=0 --param rrf_k0=30 (repeatable).",
    )
    parser.add_argument("--database-url", default=None, help="Run the API in process on this store (caches off).")
    parser.add_argument(
        "--search-config",
        type=Path,
        default=None,
        help="With --database-url: this search.yaml, not the shipped one.",
    )
    parser.add_argument(
        "--without-own-documents",
        action="store_true",
        help="With --database-url: only the text tasks, on a copy of the store without the queries' own documents.",
    )
    parser.add_argument("--fresh-copy", action="store_true", help="Re-make the copy of --without-own-documents.")
    parser.add_argument("--group-by", choices=["task", "shape", "words"], default="task", help="The table's rows.")
    parser.add_argument("--save", type=Path, default=LAST_RUN, help="Where this run's table is written.")
    parser.add_argument("--baseline", type=Path, default=None, help="The run to compare with (default: --save's).")
    args = parser.parse_args()
    items = load_items(args.queries, args.limit)
    if args.without_own_documents:
        if not args.database_url:
            parser.error("--without-own-documents needs --database-url")
        items = [item for item in items if item.get("task") in TEXT_TASKS]
        args.database_url = copy_without_own(args.database_url, items, fresh=args.fresh_copy)
    headers = {"X-API-Key": args.api_key} if args.api_key else {}
    extra = {name: json.loads(value) for name, value in (p.split("=", 1) for p in args.param)}
    baseline_path = args.baseline or args.save
    baseline = json.loads(baseline_path.read_text()) if baseline_path.is_file() else {}
    dropped: dict[str, int] = {}
    if args.database_url:
        scores, failures = _in_process(
            args.database_url,
            items,
            args.modes.split(","),
            extra,
            search_config=args.search_config,
            dropped=dropped,
            group_by=args.group_by,
        )
    else:
        with httpx.Client(base_url=args.url, timeout=30, headers=headers) as http:
            scores, failures = evaluate(http, items, args.modes.split(","), extra, dropped, args.group_by)
    table = {f"{task}|{mode}": means(values) + [len(values)] for (task, mode), values in scores.items()}
    print(f"{'task':<28} {'mode':<8} {'n':>5} {'nDCG@10':>8} {'MRR@10':>8} {'R@10':>8} {'P@1':>6} {'delta':>7}")
    for (task, mode), values in sorted(scores.items(), key=lambda kv: (kv[0][0] == "ALL", kv[0])):
        m = means(values)
        before = baseline.get(f"{task}|{mode}")
        delta = f"{m[0] - before[0]:+7.3f}" if before else f"{'':>7}"
        print(f"{task:<28} {mode:<8} {len(values):>5} {m[0]:>8.3f} {m[1]:>8.3f} {m[2]:>8.3f} {m[3]:>6.3f} {delta}")
    if baseline:
        print(f"delta: nDCG@10 against {baseline_path}")
    if failures:
        print(f"{failures} requests failed (counted as empty rankings)")
    for mode, count in sorted(dropped.items()):
        print(f"{mode}: {count / len(items):.2f} vector candidates per query under the model's threshold")
    args.save.parent.mkdir(parents=True, exist_ok=True)
    args.save.write_text(json.dumps(table, indent=1, sort_keys=True))


def _in_process(
    url: str,
    items: list[dict[str, Any]],
    modes: list[str],
    extra: dict[str, Any],
    search_config: Path | None = None,
    dropped: dict[str, int] | None = None,
    group_by: str = "task",
) -> tuple[Scores, int]:
    """evaluate() against the API run in process on the store at `url` (caches off); `search_config`
    replaces the shipped search.yaml (bench/class_weights.py)."""
    from fastapi.testclient import TestClient

    from serving.api.app import create_app

    with TestClient(create_app(api_settings(url, search_config))) as api:
        return evaluate(api, items, modes, extra, dropped, group_by)


def api_settings(url: str, search_config: Path | None = None) -> Any:  # noqa: ANN401 - a ServingSettings
    """The API's settings for an in-process bench on the store at `url`: caches, quotas and MCP off."""
    from serving.settings import ServingSettings

    return ServingSettings(  # type: ignore[call-arg]
        _env_file=None,
        **({"search_config": search_config} if search_config else {}),
        database_url=url,
        mcp_enabled=False,
        query_cache_size=0,
        result_cache_size=0,
        anonymous_rate_per_minute=0,
        anonymous_heavy_concurrency=0,
    )


if __name__ == "__main__":
    main()
