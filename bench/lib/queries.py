"""Labelled query sets (one JSON object a line: query, filters, relevant documents, task) and where they live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval"
DEV_QUERIES = EVAL / "dev_queries.jsonl"


def load_items(path: Path, limit: int = 0) -> list[dict[str, Any]]:
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return items[:limit] if limit else items


def load_queries(path: Path, filters: bool) -> list[dict[str, Any]]:
    """Each distinct query once, cut at 8,000 characters, with its own filters or none."""
    seen: set[str] = set()
    out = []
    for item in load_items(path):
        if item["query"] not in seen:
            seen.add(item["query"])
            kept = {k: v for k, v in (item.get("filters") or {}).items() if v} if filters else {}
            out.append({"query": item["query"][:8000], "filters": kept})
    return out
