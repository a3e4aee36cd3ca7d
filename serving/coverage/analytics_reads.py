"""The analytics part of POST /v1/coverage over the store: one more statement on the request's connection (the
asked techniques' analytics), the cached holdings, and what they add to the techniques and the gaps."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import psycopg
from psycopg.rows import dict_row

from serving.access.keys import Principal
from serving.contract.coverage_models import CoverageGaps, CoverageRequest, Kind, TechniqueCoverage
from serving.coverage.analytics import AnalyticRow, AnalyticsPart, analytic_row, assemble_analytics
from serving.coverage.holdings import Holdings, HoldingsReads
from serving.coverage.log_sources import LogSourceTable, shipped_log_sources
from serving.search.statements import Statements

DETECTIONS_SOURCE = "mitre_attack_detections"  # ATT&CK's detection strategies and analytics


@dataclass(frozen=True)
class AnalyticsRead:
    """The analytics rows of the asked techniques and the holdings, assembled for the techniques an answer lists."""

    rows: list[AnalyticRow]
    holdings: Holdings
    table: LogSourceTable

    def part(self, techniques: Collection[str], top: int) -> AnalyticsPart:
        wanted = set(techniques)
        return assemble_analytics([r for r in self.rows if r.technique in wanted], self.table, self.holdings, top)


@dataclass(frozen=True)
class AnalyticsReads:
    """The shipped log-source table and the store's holdings, read once per data version."""

    table: LogSourceTable = field(default_factory=shipped_log_sources)
    holdings: HoldingsReads = field(default_factory=HoldingsReads)

    def read(
        self,
        conn: psycopg.Connection,
        statements: Statements,
        version: str,
        techniques: Sequence[str],
        req: CoverageRequest,
        kinds: Mapping[str, Kind],
        principal: Principal,
    ) -> AnalyticsRead:
        """The analytics of `techniques` (as the coverage statement asked them) and what the store holds for them."""
        params = {
            "techniques": list(techniques),
            "fold": req.fold_subtechniques,
            "platforms": req.platforms,
            "detections_source": DETECTIONS_SOURCE,
            **principal.params(),
        }
        with conn.cursor(row_factory=dict_row) as cur:
            rows = [analytic_row(r) for r in cur.execute(statements.coverage_analytics, params).fetchall()]
        sources = sorted(s for s, k in kinds.items() if k == "detections")
        held = self.holdings.holdings(conn, statements.coverage_holdings, version, sources)
        return AnalyticsRead(rows, held, self.table)


def with_analytics(techniques: list[TechniqueCoverage], part: AnalyticsPart) -> list[TechniqueCoverage]:
    """The techniques, each with its analytics per platform (none: an empty list)."""
    return [t.model_copy(update={"analytics": part.by_technique.get(t.technique_id, [])}) for t in techniques]


def analytic_gaps(gaps: CoverageGaps, techniques: Sequence[TechniqueCoverage], part: AnalyticsPart) -> CoverageGaps:
    """The gaps with the analytics' two: techniques with an analytic but no detection; analytics no schema has."""
    return gaps.model_copy(
        update={
            "analytic_no_detection": [
                t.technique_id for t in techniques if part.by_technique.get(t.technique_id) and not t.detections.count
            ],
            "analytic_no_schema": part.no_schema,
        }
    )
