"""What searches look up on every request, cached: technique names, source names, lexeme statistics, the
title vocabulary of spelling correction."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from secrag.attack_domains import DEFAULT_DOMAIN, DOMAINS, PROCEDURE_SOURCES
from secrag.db.queries import Queries, one_row
from serving.access.keys import Principal
from serving.contract.errors import InvalidField
from serving.search.lexicon import LexemeStats
from serving.search.spelling import Vocabulary
from serving.search.statements import Statements
from serving.search.technique_names import TechniqueNames

T = TypeVar("T")


@dataclass(frozen=True)
class SourceFacts:
    """A source as a plan cites it: its category and kind (which plan category it fills) and served version."""

    category: str | None
    kind: str
    version: str | None


log = logging.getLogger(__name__)
LOOKUP_TTL = 300.0
SOURCES_TTL = 30.0
DATA_VERSION_TTL = 1.0  # how stale a cached search response may be after a publish
NO_VOCABULARY = Vocabulary.from_rows([])  # until the first read: no spelling corrections


@dataclass
class Cached:
    """A value refreshed at most every `ttl` seconds."""

    ttl: float
    value: Any = None
    at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    refreshing: bool = False

    def due(self) -> bool:
        """Whether the next `get` loads (nothing held yet, or older than `ttl`)."""
        with self.lock:
            return self._stale()

    def _stale(self) -> bool:  # under the lock
        return self.value is None or time.monotonic() - self.at > self.ttl

    def get(self, load: Callable[[], T]) -> T:
        with self.lock:
            if self._stale():
                self.value = load()
                self.at = time.monotonic()
            return self.value  # type: ignore[no-any-return]

    def get_or_refresh(self, refresh: Callable[[], T], empty: T) -> T:
        """The value without waiting: `empty` until one background thread (`refresh`) has loaded it,
        then the value, reloaded in the background once it is older than `ttl` (a slow store-wide read
        never holds up a request, nor a pooled connection of one)."""
        with self.lock:
            if self._stale() and not self.refreshing:
                self.refreshing = True
                try:
                    threading.Thread(target=self._refresh, args=(refresh,), name="catalog-refresh", daemon=True).start()
                except RuntimeError:
                    self.refreshing = False
                    raise
            return empty if self.value is None else self.value

    def load_now(self, load: Callable[[], T]) -> T:
        """Load the value in this thread (start-up)."""
        value = load()
        with self.lock:
            self.value, self.at = value, time.monotonic()
        return value

    def _refresh(self, load: Callable[[], Any]) -> None:
        try:
            self.load_now(load)
        except Exception:  # noqa: BLE001 - the old value (or none) serves until the next attempt
            log.warning("catalog refresh failed; the previous value is kept", exc_info=True)
            with self.lock:
                self.at = time.monotonic()
        finally:
            with self.lock:
                self.refreshing = False

    def clear(self) -> None:
        with self.lock:
            self.value = None


@dataclass
class Catalog:
    """The store's vocabularies a request consults, each re-read at most every few minutes."""

    pool: ConnectionPool
    queries: Queries
    statements: Statements
    # Statement timeout of store-wide reads (the spelling vocabulary: 0.2 s on the real corpus, 3.5 s at
    # 1M chunks (docs/scaling.md), beyond a request's timeout).
    aggregate_timeout_ms: int = 60_000
    _lookup: Cached = field(default_factory=lambda: Cached(LOOKUP_TTL))
    _technique_ids: Cached = field(default_factory=lambda: Cached(LOOKUP_TTL))
    _source_names: Cached = field(default_factory=lambda: Cached(SOURCES_TTL))
    _source_facts: Cached = field(default_factory=lambda: Cached(SOURCES_TTL))
    _public_sources: Cached = field(default_factory=lambda: Cached(SOURCES_TTL))
    _lexeme_stats: Cached = field(default_factory=lambda: Cached(LOOKUP_TTL))
    _data_version: Cached = field(default_factory=lambda: Cached(DATA_VERSION_TTL))
    _vocabulary: Cached = field(default_factory=lambda: Cached(LOOKUP_TTL))
    _technique_names: Cached = field(default_factory=lambda: Cached(LOOKUP_TTL))
    _technique_tactics: Cached = field(default_factory=lambda: Cached(LOOKUP_TTL))
    _technique_examples: Cached = field(default_factory=lambda: Cached(LOOKUP_TTL))
    _technique_domains: Cached = field(default_factory=lambda: Cached(LOOKUP_TTL))
    _indexed_sources: Cached = field(default_factory=lambda: Cached(SOURCES_TTL))
    _source_versions: Cached = field(default_factory=lambda: Cached(DATA_VERSION_TTL))

    def data_version(self) -> str:
        """A token that changes with every publish and embedding pass (read at most once a second): the key
        a cached search response is looked up by."""

        def load() -> str:
            with self.pool.connection() as conn:
                return self.read_data_version(conn)

        return self._data_version.get(load)

    def read_data_version(self, conn: psycopg.Connection) -> str:
        """The data version `conn` sees now (uncached): the key a fresh response read on `conn` is kept under."""
        return str(one_row(conn.execute(self.queries.data_version))[0])

    def technique_lookup(self) -> dict[str, str]:
        """ATT&CK id -> full name for query-time enrichment (the index-time lookup, cached)."""

        def load() -> dict[str, str]:
            with self.pool.connection() as conn:
                return dict(conn.execute(self.queries.technique_names).fetchall())

        return self._lookup.get(load)

    def technique_names(self, domains: Sequence[str] = (DEFAULT_DOMAIN,)) -> TechniqueNames:
        """The technique names a query may name in full, for the label leg: those of the given ATT&CK domains
        (Enterprise's unless a search asks others: 91 names are in two or three matrices, Process Injection
        among them, and an earlier domain's id wins), cached with the lookup."""
        key = tuple(d for d in DOMAINS if d in domains)
        table: dict[tuple[str, ...], TechniqueNames] = self._technique_names.get(dict)
        found = table.get(key)
        if found is None:
            of = self.technique_domains()
            names = self.technique_lookup()
            ordered = sorted(
                (tid for tid in names if of.get(tid, DEFAULT_DOMAIN) in key),
                key=lambda tid: (key.index(of.get(tid, DEFAULT_DOMAIN)), tid),
            )
            found = table[key] = TechniqueNames.from_lookup({tid: names[tid] for tid in ordered})
        return found

    def technique_tactics(self) -> dict[str, list[str]]:
        """Active ATT&CK id -> its tactics' short names (cached like the lookup)."""

        def load() -> dict[str, list[str]]:
            with self.pool.connection() as conn:
                return {tid: list(tactics) for tid, tactics in conn.execute(self.queries.technique_tactics)}

        return self._technique_tactics.get(load)

    def technique_examples(self) -> dict[str, int]:
        """ATT&CK id -> its public procedure examples in the store, every domain's (the map decision's prior;
        cached like the lookup)."""

        def load() -> dict[str, int]:
            sources = list(PROCEDURE_SOURCES.values())
            with self.pool.connection() as conn:
                return dict(conn.execute(self.queries.technique_examples, {"procedure_sources": sources}).fetchall())

        return self._technique_examples.get(load)

    def technique_domains(self) -> dict[str, str]:
        """ATT&CK id -> its domain (enterprise, mobile, ics), retired ids too (cached like the lookup)."""

        def load() -> dict[str, str]:
            with self.pool.connection() as conn:
                return dict(conn.execute(self.queries.technique_domains).fetchall())

        return self._technique_domains.get(load)

    def technique_ids(self) -> list[str]:
        def load() -> list[str]:
            with self.pool.connection() as conn:
                return [r[0] for r in conn.execute(self.queries.technique_ids).fetchall()]

        return self._technique_ids.get(load)

    def source_names(self) -> list[str]:
        """Every source name (exact-identifier ids are `<source>:<id>`; the legs apply the ACL)."""

        def load() -> list[str]:
            with self.pool.connection() as conn:
                return [r[0] for r in conn.execute(self.queries.source_names).fetchall()]

        return self._source_names.get(load)

    def source_facts(self) -> dict[str, SourceFacts]:
        """Every source's category, kind and served version, cached for SOURCES_TTL (no per-caller data:
        the hits that name a source already passed the caller's access checks)."""

        def load() -> dict[str, SourceFacts]:
            with self.pool.connection() as conn:
                rows = conn.execute(self.queries.source_facts).fetchall()
            return {name: SourceFacts(category, kind, version) for name, category, kind, version in rows}

        return self._source_facts.get(load)

    def visible_sources(self, conn: psycopg.Connection, principal: Principal) -> list[str]:
        """Source names the caller may know about (user folders only with a visible document)."""
        return [r[0] for r in conn.execute(self.statements.known_sources, principal.params()).fetchall()]

    def vector_indexed_sources(self, conn: psycopg.Connection, model_id: str) -> frozenset[str]:
        """The sources with an HNSW index of their own for this model (`secrag models index-source`; cached, read
        on `conn`): a search filtered to one of them walks that index."""
        rows = self._indexed_sources.get(
            lambda: [tuple(r) for r in conn.execute(self.queries.vector_indexed_sources).fetchall()]
        )
        return frozenset(source for model, source in rows if model == model_id)

    def source_versions(self, conn: psycopg.Connection, *, fresh: bool = False) -> dict[str, str]:
        """Each source's data version (read at most once a second, on `conn`; now with `fresh`): the version at
        which the vectors the API holds in memory may serve (serving/search/source_vectors.py)."""

        def read() -> dict[str, str]:
            return {str(r[0]): str(r[1]) for r in conn.execute(self.queries.source_data_versions).fetchall()}

        if fresh:
            return self._source_versions.load_now(read)
        return self._source_versions.get(read)

    def public_sources(self, conn: psycopg.Connection) -> frozenset[str]:
        """Names of the sources that are not user folders: anyone may filter by them (cached; read on `conn`)."""
        return self._public_sources.get(
            lambda: frozenset(r[0] for r in conn.execute(self.queries.public_source_names).fetchall())
        )

    def resolve_sources(
        self,
        conn: psycopg.Connection,
        principal: Principal,
        requested: Sequence[str] | None,
        loc: Sequence[str] = ("body", "filters", "sources"),
    ) -> list[str] | None:
        """The requested source names as stored, matched case-insensitively to the names the caller may
        see; an unknown name is a 422 (at `loc`) listing the valid ones."""
        if not requested or set(requested) <= self.public_sources(conn):
            return list(requested) if requested else None
        known = self.visible_sources(conn, principal)
        by_folded = {name.casefold(): name for name in known}
        resolved = []
        for i, name in enumerate(requested):
            match = by_folded.get(name.strip().casefold())
            if match is None:
                raise InvalidField(
                    [*loc, i],
                    f"unknown source {name[:80]!r}; valid sources: {', '.join(known)}",
                )
            resolved.append(match)
        return resolved

    def lexeme_stats(self, conn: psycopg.Connection | None = None) -> LexemeStats:
        """Column statistics of chunks (cached), read on `conn` when given: a request never holds two."""

        def read(c: psycopg.Connection) -> LexemeStats:
            with c.cursor(row_factory=dict_row) as cur:
                return LexemeStats.from_row(cur.execute(self.queries.lexeme_frequencies).fetchone())

        def load() -> LexemeStats:
            if conn is not None:
                return read(conn)
            with self.pool.connection() as own:
                return read(own)

        return self._lexeme_stats.get(load)

    def _read_vocabulary(self) -> Vocabulary:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('statement_timeout', %s, true)", [str(self.aggregate_timeout_ms)])
            return Vocabulary.from_rows(conn.execute(self.queries.spelling_vocabulary).fetchall())

    def load_vocabulary(self) -> None:
        """Read the spelling vocabulary now (at start-up, before requests); a failure is logged and the
        requests' background refresh tries again."""
        try:
            self._vocabulary.load_now(self._read_vocabulary)
        except Exception:  # noqa: BLE001 - an unreachable store is reported by /readyz, not here
            log.warning("spelling vocabulary not loaded at start-up; it loads in the background", exc_info=True)

    def vocabulary(self) -> Vocabulary:
        """The words of public titles, for spelling correction. It is a store-wide read (0.2 s on the
        real corpus, 3.5 s at 1M chunks), so it is never made inside a request: read at start-up, then
        refreshed in the background every LOOKUP_TTL on a pooled connection with `aggregate_timeout_ms`;
        until the first read completes, requests get an empty vocabulary (no corrections)."""
        return self._vocabulary.get_or_refresh(self._read_vocabulary, NO_VOCABULARY)

    def forget_lexeme_stats(self) -> None:
        """Re-read the statistics on next use (after an ANALYZE)."""
        self._lexeme_stats.clear()

    def query_lexemes(self, conn: psycopg.Connection, params: dict[str, Any]) -> tuple[list[str], list[str]]:
        """The full-text and identifier lexemes of the query, as PostgreSQL normalises them."""
        words, idents = one_row(conn.execute(self.queries.query_lexemes, params))
        return words or [], idents or []
