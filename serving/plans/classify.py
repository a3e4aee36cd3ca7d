"""Deterministic query classification: which kind of question is this, and which signals said so."""

from __future__ import annotations

import re
from dataclasses import dataclass

from serving.contract.query_classes import DEFAULT_TYPE, QueryType
from serving.plans.plans_file import Classification

# Keyword ties go to the more specific kind of question ("which table has the command line": schema).
_PRIORITY: tuple[QueryType, ...] = ("schema", "detection", "forensic", "lolbin", "test")


@dataclass(frozen=True)
class QueryClass:
    """The query type plus every rule that matched (ids, keywords, platforms)."""

    query_type: QueryType
    signals: tuple[str, ...]
    platforms: tuple[str, ...]


def _has_phrase(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(phrase.lower())}(?![a-z0-9])", text) is not None


def classify(query: str, rules: Classification) -> QueryClass:
    """Id rules first (technique id -> mitre_id, CVE -> vulnerability), then the keyword set with the
    most hits (ties by a fixed priority), else `default`."""
    text = query.lower()
    signals: list[str] = []
    query_type: QueryType | None = None
    for name, pattern in rules.id_rules.items():
        for match in re.finditer(pattern, query):
            signals.append(f"{name}:{match.group(0)}")
            query_type = query_type or name
    hits: dict[QueryType, int] = {}
    for category, words in rules.keywords.items():
        for word in words:
            if _has_phrase(text, word):
                signals.append(f"keyword:{category}:{word}")
                hits[category] = hits.get(category, 0) + 1
    if not query_type and hits:
        order = {c: i for i, c in enumerate(_PRIORITY)}
        query_type = sorted(hits, key=lambda c: (-hits[c], order.get(c, len(order)), c))[0]
    platforms = tuple(p for p in rules.platforms if _has_phrase(text, p))
    signals.extend(f"platform:{p}" for p in platforms)
    return QueryClass(query_type or DEFAULT_TYPE, tuple(signals), platforms)
