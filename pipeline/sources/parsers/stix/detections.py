"""ATT&CK detection strategies (DET) and their analytics (AN) as records, labelled with the technique detected.

A strategy `detects` one technique and lists its analytics (`x_mitre_analytic_refs`); an analytic names one
platform, its log sources (each tied to a data component) and its mutable elements. An analytic is reached
through an active strategy only: one that no active strategy lists has no technique and is left out, as a
retired strategy's analytics are (ATT&CK v18 has none of either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import normalize
from ...mitre_lookup import ATTACK_SOURCE, domain_of, domain_platforms, external_id, external_ref, is_retired
from ...records import Record, SourceFile
from .index import BundleIndex, StixObject
from .procedures import technique_title
from .text import clean, compact, plain_links, section

STRATEGY = "x-mitre-detection-strategy"
ANALYTIC = "x-mitre-analytic"
TYPES = (STRATEGY, ANALYTIC)
_NO_PLATFORM = "None"  # ICS analytics name no platform this way


def _detected(strategy: StixObject, ix: BundleIndex) -> list[tuple[str, str]]:
    """(id, "Parent: Child" name) of the active techniques the strategy `detects`."""
    found = {}
    for _, target in ix.targets(strategy["id"], "detects"):
        tid = external_id(target)
        if target.get("type") == "attack-pattern" and tid:
            found[tid] = technique_title(target, ix, tid)
    return sorted(found.items())


def _analytics(strategy: StixObject, ix: BundleIndex) -> list[StixObject]:
    """The strategy's active analytics with an ATT&CK id, in its own order."""
    found = (ix.by_id.get(str(ref)) for ref in strategy.get("x_mitre_analytic_refs") or ())
    return [a for a in found if a is not None and not is_retired(a) and external_id(a)]


def _platforms(analytic: StixObject) -> list[str]:
    """The analytic's ATT&CK platform names as upstream writes them."""
    return [str(p) for p in analytic.get("x_mitre_platforms") or ()]


def _log_sources(analytic: StixObject, ix: BundleIndex) -> list[dict[str, str]]:
    """Name, channel and data component (id and name, when the bundle holds it) of each log source."""
    found = []
    for ref in analytic.get("x_mitre_log_source_references") or ():
        if not isinstance(ref, Mapping) or not ref.get("name"):
            continue
        component = ix.by_id.get(str(ref.get("x_mitre_data_component_ref")))
        entry = {"name": str(ref["name"]).strip(), "channel": str(ref.get("channel") or "").strip()}
        if component is not None:
            entry["data_component_id"] = external_id(component) or ""
            entry["data_component"] = str(component.get("name", "")).strip()
        found.append(compact(entry))
    return found


def _mutable_elements(analytic: StixObject) -> list[dict[str, str]]:
    found = []
    for element in analytic.get("x_mitre_mutable_elements") or ():
        if isinstance(element, Mapping) and element.get("field"):
            field, description = str(element["field"]).strip(), clean(element.get("description"))
            found.append(compact({"field": field, "description": description}))
    return found


def _log_source_line(source: Mapping[str, str]) -> str:
    """ "WinEventLog:Security EventCode=4624 (DC0067 Logon Session Creation)"."""
    line = " ".join(v for v in (source["name"], source.get("channel", "")) if v)
    component = " ".join(v for v in (source.get("data_component_id"), source.get("data_component")) if v)
    return f"{line} ({component})" if component else line


def _platform_text(platforms: list[str]) -> str:
    return ", ".join(p for p in platforms if p != _NO_PLATFORM)


def _analytic_parts(analytic: StixObject, ix: BundleIndex) -> list[str]:
    """What an analytic says: platform, what to watch, its log sources and its mutable elements."""
    elements = [": ".join(e.values()) for e in _mutable_elements(analytic)]  # field, then description
    return [
        section("Platform", _platform_text(_platforms(analytic))),
        plain_links(clean(analytic.get("description"))),  # linked techniques' URLs would read as labels
        section("Log sources", [_log_source_line(s) for s in _log_sources(analytic, ix)]),
        section("Mutable elements", elements),
    ]


def _detects_line(techniques: list[tuple[str, str]]) -> str:
    return section("Detects", ", ".join(f"{tid} {name}" for tid, name in techniques))


def _common(obj: StixObject, kind: str, domain: str) -> dict[str, Any]:
    return {
        "kind": kind,
        "domain": domain,
        "stix_id": obj["id"],
        "version": obj.get("x_mitre_version"),
        "modified": obj.get("modified"),
    }


def _strategy(obj: StixObject, ix: BundleIndex, file: SourceFile, ref: Mapping[str, Any]) -> Record:
    """A strategy: the technique it detects, then each analytic's id, platform and text."""
    det, name = str(ref["external_id"]).strip(), str(obj.get("name", "")).strip()
    techniques, analytics = _detected(obj, ix), _analytics(obj, ix)
    parts = [_detects_line(techniques)]
    for analytic in analytics:
        parts.append(f"Analytic {external_id(analytic)}:\n" + normalize.join_text(*_analytic_parts(analytic, ix)))
    domain = domain_of(obj, ix.domain)
    metadata = _common(obj, "detection-strategy", domain)
    metadata["analytics"] = [
        compact({"id": external_id(a), "platforms": _platforms(a), "log_sources": _log_sources(a, ix)})
        for a in analytics
    ]
    return Record(
        source=file.source,
        upstream_id=det,
        title=name,
        body=normalize.join_text(*parts),
        url=str(ref.get("url") or file.url_for()),
        techniques=normalize.technique_ids([tid for tid, _ in techniques]),
        platforms=domain_platforms([p for a in analytics for p in _platforms(a)], domain),
        tags=normalize.tags(["detection-strategy"]),
        metadata=compact(metadata),
        path=file.rel,
    )


def _analytic(obj: StixObject, ix: BundleIndex, file: SourceFile, ref: Mapping[str, Any]) -> Record | None:
    """An analytic of an active strategy, titled "<strategy>: <platform> (AN0110)"; None without one."""
    strategy = ix.strategy_of.get(obj["id"])
    det = external_id(strategy) if strategy is not None else None
    if strategy is None or det is None:
        return None
    an, strategy_name = str(ref["external_id"]).strip(), str(strategy.get("name", "")).strip()
    techniques, platforms = _detected(strategy, ix), _platforms(obj)
    label = _platform_text(platforms)
    domain = domain_of(obj, ix.domain)
    metadata = _common(obj, "analytic", domain)
    metadata |= {
        "strategy": det,
        "strategy_name": strategy_name,
        "platforms": platforms,
        "log_sources": _log_sources(obj, ix),
        "mutable_elements": _mutable_elements(obj),
    }
    parts = [section("Strategy", f"{det} {strategy_name}"), _detects_line(techniques), *_analytic_parts(obj, ix)]
    return Record(
        source=file.source,
        upstream_id=an,
        title=f"{strategy_name}: {label} ({an})" if label else f"{strategy_name} ({an})",
        body=normalize.join_text(*parts),
        url=str(ref.get("url") or file.url_for()),
        techniques=normalize.technique_ids([tid for tid, _ in techniques]),
        platforms=domain_platforms(platforms, domain),
        tags=normalize.tags(["analytic"]),
        metadata=compact(metadata),
        path=file.rel,
    )


def record(obj: StixObject, ix: BundleIndex, file: SourceFile) -> Record | None:
    """The record of one strategy or analytic; None without an ATT&CK id (or, an analytic, an active strategy)."""
    ref = external_ref(obj, ATTACK_SOURCE)
    if ref is None:
        return None
    if obj.get("type") == STRATEGY:
        return _strategy(obj, ix, file, ref)
    return _analytic(obj, ix, file, ref)


def technique_links(technique: StixObject, ix: BundleIndex) -> tuple[list[dict[str, str]], list[str]]:
    """A technique's active detection strategies ([{id, name}]) and their active analytics' ids."""
    strategies = sorted(
        (s for s in ix.sources(technique["id"], "detects") if s.get("type") == STRATEGY and external_id(s)),
        key=lambda s: str(external_id(s)),
    )
    links = [{"id": str(external_id(s)), "name": str(s.get("name", "")).strip()} for s in strategies]
    analytics = [str(external_id(a)) for s in strategies for a in _analytics(s, ix)]
    return links, analytics
