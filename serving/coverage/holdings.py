"""What the store's public rule sets and telemetry schemas hold, by the names the log-source mapping uses (Sigma
logsources, Elastic index patterns, Splunk data sources, schema doc ids): one store-wide statement, read again
only when the store's data version changes."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import psycopg
from psycopg.rows import dict_row

from secrag.telemetry_refs import LOGSOURCE_KEYS, SCHEMA_SOURCES
from serving.coverage.log_sources import SigmaLogsource

KeySet = tuple[str, ...]  # some of LOGSOURCE_KEYS, in their order


@dataclass(frozen=True)
class Holdings:
    """Rule counts per Sigma logsource (every subset of its keys), per Elastic index pattern and per Splunk data
    source, and the schema doc ids held."""

    sigma: Mapping[KeySet, Mapping[tuple[str, ...], Mapping[str, int]]]
    indices: tuple[tuple[tuple[str, ...], int], ...]  # (a rule group's index patterns, lower case; its rules)
    data_sources: Mapping[str, int]
    schemas: frozenset[str]
    _elastic: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    memo: dict[object, Any] = field(default_factory=dict, repr=False, compare=False)  # what readers derive from it

    def sigma_rules(self, logsource: SigmaLogsource) -> dict[str, int]:
        """Per source, the rules whose logsource has every key of `logsource` with its value (any case)."""
        keys = tuple(k for k, _ in logsource)
        return dict(self.sigma.get(keys, {}).get(tuple(v for _, v in logsource), {}))

    def elastic_rules(self, prefix: str) -> int:
        """The rules reading an index pattern that starts with `prefix` (each rule once)."""
        if prefix not in self._elastic:  # a benign race: two threads compute the same count
            self._elastic[prefix] = sum(
                n for patterns, n in self.indices if any(p.startswith(prefix) for p in patterns)
            )
        return self._elastic[prefix]

    def splunk_rules(self, data_source: str) -> int:
        return self.data_sources.get(data_source.casefold(), 0)

    def has_schema(self, doc_id: str) -> bool:
        return doc_id in self.schemas


EMPTY = Holdings(sigma={}, indices=(), data_sources={}, schemas=frozenset())


def holdings_from_rows(rows: Iterable[Mapping[str, Any]]) -> Holdings:
    """The statement's rows (a detection group: source, logsource, index, data_sources, n; a schema: doc_id)."""
    sigma: dict[KeySet, dict[tuple[str, ...], Counter[str]]] = {}
    indices: list[tuple[tuple[str, ...], int]] = []
    data_sources: Counter[str] = Counter()
    schemas: set[str] = set()
    for row in rows:
        if row["doc_id"] is not None:
            schemas.add(str(row["doc_id"]))
            continue
        n, source = int(row["n"]), str(row["source"])
        logsource = row["logsource"]
        if isinstance(logsource, Mapping):
            given = {k: str(logsource[k]).strip().lower() for k in LOGSOURCE_KEYS if logsource.get(k) not in (None, "")}
            for size in range(1, len(given) + 1):
                for keys in combinations(tuple(given), size):
                    values = tuple(given[k] for k in keys)
                    sigma.setdefault(keys, {}).setdefault(values, Counter())[source] += n
        patterns = _strings(row["index"])
        if patterns:
            indices.append((tuple(p.lower() for p in patterns), n))
        for name in dict.fromkeys(d.casefold() for d in _strings(row["data_sources"])):
            data_sources[name] += n
    return Holdings(
        sigma={keys: {values: dict(c) for values, c in by.items()} for keys, by in sigma.items()},
        indices=tuple(indices),
        data_sources=dict(data_sources),
        schemas=frozenset(schemas),
    )


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int)]
    return []


@dataclass
class HoldingsReads:
    """The holdings, read on a request's connection when the data version it names is not the one held."""

    _held: tuple[str, Holdings] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def holdings(
        self, conn: psycopg.Connection, statement: str, version: str, detection_sources: list[str]
    ) -> Holdings:
        with self._lock:
            if self._held is not None and self._held[0] == version:
                return self._held[1]
        params = {"detection_sources": detection_sources, "schema_sources": list(SCHEMA_SOURCES)}
        with conn.cursor(row_factory=dict_row) as cur:
            held = holdings_from_rows(cur.execute(statement, params).fetchall())
        with self._lock:
            self._held = (version, held)
        return held
