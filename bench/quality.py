"""Retrieval quality per task and mode: nDCG@10, MRR@10, Recall@10 and P@1 over graded relevance judgements.

    python bench/quality.py --queries ../shared/eval/dev_queries.jsonl --url http://127.0.0.1:8000
    python bench/quality.py --queries ../shared/eval/dev_queries.jsonl --database-url postgresql://... \
        [--save runs/after.json] [--baseline runs/before.json] [--search-config my-search.yaml]

With --database-url the API runs in process (caches off). Every run is saved (default
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
            scores[(item.get("task", "all"), mode)].append(result)
            scores[("ALL", mode)].append(result)
    return scores, failures


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
    parser.add_argument("--save", type=Path, default=LAST_RUN, help="Where this run's table is written.")
    parser.add_argument("--baseline", type=Path, default=None, help="The run to compare with (default: --save's).")
    args = parser.parse_args()
    items = load_items(args.queries, args.limit)
    headers = {"X-API-Key": args.api_key} if args.api_key else {}
    extra = {name: json.loads(value) for name, value in (p.split("=", 1) for p in args.param)}
    baseline_path = args.baseline or args.save
    baseline = json.loads(baseline_path.read_text()) if baseline_path.is_file() else {}
    dropped: dict[str, int] = {}
    if args.database_url:
        scores, failures = _in_process(
            args.database_url, items, args.modes.split(","), extra, search_config=args.search_config, dropped=dropped
        )
    else:
        with httpx.Client(base_url=args.url, timeout=30, headers=headers) as http:
            scores, failures = evaluate(http, items, args.modes.split(","), extra, dropped)
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
) -> tuple[Scores, int]:
    """evaluate() against the API run in process on the store at `url` (caches off); `search_config`
    replaces the shipped search.yaml (bench/class_weights.py)."""
    from fastapi.testclient import TestClient

    from serving.api.app import create_app

    with TestClient(create_app(api_settings(url, search_config))) as api:
        return evaluate(api, items, modes, extra, dropped)


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
