"""ATT&CK's analytics in a coverage: the rows of the analytics statement as each technique's analytics per platform,
each log source they need with what the mapping table resolves it to and what the store holds of that, and the
analytics no held schema describes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from serving.contract.coverage_models import (
    AnalyticNeed,
    DataSourceHeld,
    IndexHeld,
    LogSourceCoverage,
    LogSourceRef,
    PlatformAnalytics,
    SchemaHeld,
    SigmaHeld,
)
from serving.coverage.holdings import Holdings
from serving.coverage.log_sources import LogSourceTable

NO_PLATFORM = "None"  # ICS analytics name no platform; ATT&CK writes "None"
SourceKey = tuple[str, str | None]  # (name, channel)


@dataclass(frozen=True)
class AnalyticRow:
    """One row of the analytics statement: an asked technique and one of its analytics."""

    technique: str
    doc_id: str
    strategy: str | None
    platforms: tuple[str, ...]
    log_sources: tuple[LogSourceRef, ...]

    @property
    def analytic_id(self) -> str:
        return self.doc_id.partition(":")[2]


@dataclass(frozen=True)
class AnalyticsPart:
    """What the analytics add to a coverage answer."""

    by_technique: Mapping[str, list[PlatformAnalytics]]
    log_sources: list[LogSourceCoverage]
    no_schema: list[str]  # analytic ids


def analytic_row(r: Mapping[str, Any]) -> AnalyticRow:
    refs = tuple(
        LogSourceRef(
            name=str(s["name"]),
            channel=str(s["channel"]) if s.get("channel") else None,
            data_component=str(s["data_component"]) if s.get("data_component") else None,
        )
        for s in (r["log_sources"] or ())
        if isinstance(s, Mapping) and s.get("name")
    )
    platforms = tuple(str(p) for p in (r["platforms"] or ()) if isinstance(p, str))
    return AnalyticRow(r["technique"], r["doc_id"], r["strategy"], platforms, refs)


def assemble_analytics(
    rows: Iterable[AnalyticRow], table: LogSourceTable, holdings: Holdings, top: int | None = None
) -> AnalyticsPart:
    """Per technique its analytics by platform (platforms and analytics by name and id; the first `top` of each
    platform's, with their count), each log source those listed need once (most needed first) and the analytics
    with log sources none of which a held schema describes."""
    listed = list(rows)
    coverage: dict[SourceKey, LogSourceCoverage] = {}
    for row in listed:
        for ref in row.log_sources:
            key = (ref.name, ref.channel)
            if key not in coverage:
                # the same for every request until the holdings change: kept with them
                known = holdings.memo.get(key)
                if known is None:
                    known = holdings.memo[key] = log_source_coverage(ref, table, holdings)
                coverage[key] = known
    schema_held = {
        row.doc_id: any(coverage[(ref.name, ref.channel)].schema_held for ref in row.log_sources) for row in listed
    }
    by_technique: dict[str, dict[str, list[AnalyticNeed]]] = {}
    for row in listed:
        need = AnalyticNeed(
            analytic_id=row.analytic_id,
            doc_id=row.doc_id,
            strategy=row.strategy,
            log_sources=list(row.log_sources),
            schema_held=schema_held[row.doc_id],
        )
        for platform in row.platforms or (NO_PLATFORM,):
            by_technique.setdefault(row.technique, {}).setdefault(platform, []).append(need)
    shown = {
        technique: [
            PlatformAnalytics(platform=p, count=len(a), analytics=sorted(a, key=lambda n: n.analytic_id)[:top])
            for p, a in sorted(platforms.items(), key=lambda kv: kv[0].casefold())
        ]
        for technique, platforms in by_technique.items()
    }
    needed: dict[SourceKey, set[str]] = {}
    for platforms in shown.values():
        for analytics in platforms:
            for need in analytics.analytics:
                for ref in need.log_sources:
                    needed.setdefault((ref.name, ref.channel), set()).add(need.doc_id)
    ordered = sorted(needed, key=lambda k: (-len(needed[k]), k[0].casefold(), k[1] or ""))
    return AnalyticsPart(
        by_technique=shown,
        log_sources=[coverage[k].model_copy(update={"analytics": len(needed[k])}) for k in ordered],
        no_schema=sorted({row.analytic_id for row in listed if row.log_sources and not schema_held[row.doc_id]}),
    )


def log_source_coverage(ref: LogSourceRef, table: LogSourceTable, holdings: Holdings) -> LogSourceCoverage:
    """What the table resolves a log source to, and what the store holds of each of those."""
    found = table.resolve(ref.name, ref.channel)
    sigma = [SigmaHeld(logsource=dict(s), rules=holdings.sigma_rules(s)) for s in found.sigma]
    elastic = [IndexHeld(index=i, rules=holdings.elastic_rules(i)) for i in found.elastic]
    splunk = [DataSourceHeld(data_source=d, rules=holdings.splunk_rules(d)) for d in found.splunk]
    schemas = [SchemaHeld(doc_id=s, held=holdings.has_schema(s)) for s in found.schemas]
    return LogSourceCoverage(
        name=ref.name,
        channel=ref.channel,
        data_component=ref.data_component,
        analytics=0,
        resolved=found.resolved,
        sigma=sigma,
        elastic=elastic,
        splunk=splunk,
        event_categories=list(found.event_categories),
        schemas=schemas,
        rules_held=any(s.rules for s in sigma) or any(e.rules for e in elastic) or any(d.rules for d in splunk),
        schema_held=any(s.held for s in schemas),
    )
