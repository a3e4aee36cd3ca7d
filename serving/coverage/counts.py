"""POST /v1/coverage's implementation: one statement counts, under the caller's access check, the documents
of each kind labelled with each asked technique; here its rows become per-technique coverage and gaps."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from secrag.attack_domains import PROCEDURE_SOURCES, TECHNIQUE_SOURCES
from secrag.telemetry_refs import LOGSOURCE_KEYS
from serving.access.keys import Principal
from serving.contract.coverage_models import (
    CoverageGaps,
    CoverageItem,
    CoverageRequest,
    CoverageResponse,
    Kind,
    KindCoverage,
    TechniqueCoverage,
    TelemetryNeed,
)
from serving.contract.errors import NotFound
from serving.contract.limits import cap
from serving.coverage.analytics import AnalyticsPart
from serving.coverage.analytics_reads import AnalyticsReads, analytic_gaps, with_analytics
from serving.coverage.kinds import source_kinds
from serving.coverage.layer import coverage_layer, coverage_of_layer
from serving.coverage.paging import page, technique_order
from serving.layers.screen import LayerReads
from serving.search.catalog import Catalog
from serving.search.statements import Statements


@dataclass(frozen=True)
class Row:
    """One row of the statement: an asked technique and, unless it has no document, a kind and source."""

    technique: str
    kind: Kind | None
    source: str | None
    count: int
    items: tuple[CoverageItem, ...]
    logsource: Mapping[str, object] | None = None  # a Sigma detection's


SchemasFor = Callable[[Mapping[str, object]], list[str]]  # a logsource -> its telemetry schemas' doc ids
DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024  # SECRAG_MAX_ANSWER_BYTES' default
TECHNIQUES_SHARE = 4  # a page's techniques take at most this fraction of the answer bound (its layer, log sources less)


@dataclass(frozen=True)
class CoverageReads:
    """POST /v1/coverage over the store (the reads' statements, the catalog's facts, the shipped telemetry map)."""

    pool: ConnectionPool
    statements: Statements
    catalog: Catalog
    schemas_for: SchemasFor
    layers: LayerReads
    analytics: AnalyticsReads = field(default_factory=AnalyticsReads)
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES

    def coverage(self, req: CoverageRequest, principal: Principal) -> CoverageResponse:
        """What the store holds for ATT&CK techniques, by kind: one statement per request."""
        return coverage_of_layer(
            lambda asked: coverage(
                self.pool,
                self.statements,
                self.catalog,
                self.schemas_for,
                asked,
                principal,
                self.analytics,
                self.max_answer_bytes,
            ),
            self.layers,
            req,
        )


def coverage(
    pool: ConnectionPool,
    statements: Statements,
    catalog: Catalog,
    schemas_for: SchemasFor,
    req: CoverageRequest,
    principal: Principal,
    analytics: AnalyticsReads | None = None,
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
) -> CoverageResponse:
    """A page of the asked techniques' coverage: `limit` after the cursor, fewer when their coverage would pass a
    share of the answer bound; the layer, gaps and log sources of those."""
    started = time.perf_counter()
    kinds = source_kinds(catalog.source_facts())
    params: dict[str, Any] = {
        "techniques": req.techniques or [],
        "actor": req.actor,
        "tactic": req.tactic,
        "platforms": req.platforms,
        "fold": req.fold_subtechniques,
        "top": req.top,
        "kind_sources": list(kinds),
        "kinds": list(kinds.values()),
        "attack_source": TECHNIQUE_SOURCES[req.domain],  # the asked domain's, where actors and tactics are read
        "procedures_source": PROCEDURE_SOURCES[req.domain],
        "attack_sources": list(TECHNIQUE_SOURCES.values()),
        **principal.params(),
    }
    version = catalog.data_version() if analytics and req.analytics else ""  # the holdings' key (cached)
    with pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        rows = [_row(r) for r in cur.execute(statements.coverage, params).fetchall()]
        asked = page((r.technique for r in rows), req.cursor, req.limit)
        read = (
            analytics.read(conn, statements, version, asked.ids, req, kinds, principal)
            if analytics and req.analytics and asked.ids
            else None
        )
    if not rows:
        named = f"actor {req.actor!r}" if req.actor else f"tactic {req.tactic!r} on platforms {req.platforms}"
        raise NotFound(f"no ATT&CK {req.domain} techniques known for {named}")
    in_page = set(asked.ids)
    domains = catalog.technique_domains()
    techniques = [
        t.model_copy(update={"domain": domains.get(t.technique_id)})
        for t in assemble([r for r in rows if r.technique in in_page], catalog.technique_lookup(), req.top, schemas_for)
    ]
    part = read.part(asked.ids, req.top) if read is not None else None
    if part is not None:
        techniques = with_analytics(techniques, part)
    kept, over = cap(techniques, max_answer_bytes // TECHNIQUES_SHARE)
    kept = kept or techniques[:1]  # a page has at least one technique, so that paging goes on
    if read is not None and len(kept) < len(techniques):
        part = read.part([t.technique_id for t in kept], req.top)  # the log sources of those it keeps
    return _answer(req, kept, part, asked.total, asked.more or len(kept) < len(techniques), started)


def _answer(
    req: CoverageRequest,
    techniques: list[TechniqueCoverage],
    part: AnalyticsPart | None,
    total: int,
    more: bool,
    started: float,
) -> CoverageResponse:
    """The answer of a page's techniques: their layer, gaps and log sources, and the cursor after them."""
    layer = (
        coverage_layer(techniques, asked=req.actor or req.tactic).model_copy(update={"domain": f"{req.domain}-attack"})
        if req.layer
        else None
    )
    found = gaps(techniques)
    if part is not None:
        found = analytic_gaps(found, techniques, part)
    return CoverageResponse(
        techniques=techniques,
        total=total,
        truncated=more,
        next_cursor=techniques[-1].technique_id if more and techniques else None,
        gaps=found,
        log_sources=part.log_sources if part is not None else None,
        actor=req.actor,
        tactic=req.tactic,
        layer=layer,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _row(r: Mapping[str, Any]) -> Row:
    items = tuple(
        CoverageItem(doc_id=d, title=t, source=r["source"])
        for d, t in zip(r["doc_ids"] or (), r["titles"] or (), strict=True)
    )
    return Row(r["technique"], r["kind"], r["source"], int(r["n"]), items, r["logsource"])


def assemble(
    rows: Iterable[Row], names: Mapping[str, str], top: int, schemas_for: SchemasFor
) -> list[TechniqueCoverage]:
    """Per technique (by id), each kind's count, its count per source and its first `top` items by title
    (the first `top` of each row's first `top` are the kind's first `top`), and its detections' first `top`
    logsources (most read first) with their count."""
    counts: dict[str, dict[Kind, dict[str, int]]] = {}
    items: dict[str, dict[Kind, list[CoverageItem]]] = {}
    logsources: dict[str, dict[tuple[tuple[str, str], ...], int]] = {}
    for row in rows:
        counts.setdefault(row.technique, {})
        items.setdefault(row.technique, {})
        logsources.setdefault(row.technique, {})
        if row.kind is None or row.source is None:
            continue
        by_source = counts[row.technique].setdefault(row.kind, {})
        by_source[row.source] = by_source.get(row.source, 0) + row.count
        items[row.technique].setdefault(row.kind, []).extend(row.items)
        key = logsource_key(row.logsource)
        if key:
            logsources[row.technique][key] = logsources[row.technique].get(key, 0) + row.count

    def kind(technique: str, k: Kind) -> KindCoverage:
        by_source = counts[technique].get(k, {})
        listed = sorted(items[technique].get(k, []), key=lambda i: (i.title, i.doc_id))
        return KindCoverage(count=sum(by_source.values()), by_source=by_source, top=listed[:top])

    def telemetry(technique: str) -> list[TelemetryNeed]:
        ordered = sorted(logsources[technique].items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return [TelemetryNeed(logsource=dict(k), detections=n, schemas=schemas_for(dict(k))) for k, n in ordered]

    return [
        TechniqueCoverage(
            technique_id=t,
            name=names.get(t),
            telemetry=telemetry(t),
            telemetry_count=len(logsources[t]),
            detections=kind(t, "detections"),
            tests=kind(t, "tests"),
            countermeasures=kind(t, "countermeasures"),
            notes=kind(t, "notes"),
        )
        for t in sorted(counts, key=technique_order)
    ]


def logsource_key(logsource: Mapping[str, object] | None) -> tuple[tuple[str, str], ...]:
    """A logsource's product, category and service as written (lower case), in that order; empty when none."""
    if not isinstance(logsource, Mapping):
        return ()
    return tuple((k, str(logsource[k]).strip().lower()) for k in LOGSOURCE_KEYS if logsource.get(k) not in (None, ""))


def gaps(techniques: Iterable[TechniqueCoverage]) -> CoverageGaps:
    listed = list(techniques)
    return CoverageGaps(
        no_detection=[t.technique_id for t in listed if not t.detections.count],
        test_no_detection=[t.technique_id for t in listed if t.tests.count and not t.detections.count],
        detection_no_test=[t.technique_id for t in listed if t.detections.count and not t.tests.count],
    )
