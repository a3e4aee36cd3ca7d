"""Which documents count as which kind of coverage: the one place that says so (/v1/coverage's description sums it up).

A document counts for a technique when its labels (`documents.techniques`) name the technique; its kind is
its source's: the registry's category for online sources, its own kind for the caller's folders.
"""

from __future__ import annotations

from collections.abc import Mapping

from secrag.attack_domains import DEFAULT_DOMAIN, PROCEDURE_SOURCES, TECHNIQUE_SOURCES
from serving.contract.coverage_models import Kind
from serving.search.catalog import SourceFacts

KINDS: tuple[Kind, ...] = ("detections", "tests", "countermeasures", "notes")
# Detections: rule sets (sigma, elastic, splunk_security, mitre_car, hayabusa, chainsaw are category
# detection in pipeline/sources/registry); tests: attack simulations (atomic, stratus_red_team).
BY_CATEGORY: dict[str, Kind] = {"detection": "detections", "test": "tests"}
# Countermeasures: D3FEND's defensive techniques, and ATT&CK's mitigations of each domain (only its documents of
# kind mitigation: the statement leaves ATT&CK's techniques, tactics, groups and software out).
COUNTERMEASURE_SOURCES = ("mitre_d3fend", *TECHNIQUE_SOURCES.values())
ATTACK_SOURCE = TECHNIQUE_SOURCES[DEFAULT_DOMAIN]
PROCEDURES_SOURCE = PROCEDURE_SOURCES[DEFAULT_DOMAIN]
USER_FOLDER = "user_folder"


def kind_of(source: str, facts: SourceFacts) -> Kind | None:
    """The kind a source's labelled documents count as; None when they do not count."""
    if facts.kind == USER_FOLDER:
        return "notes"  # a folder holds anything; the statement's access check keeps it to its own callers
    if source in COUNTERMEASURE_SOURCES:
        return "countermeasures"
    return BY_CATEGORY.get(facts.category or "")


def source_kinds(sources: Mapping[str, SourceFacts]) -> dict[str, Kind]:
    """Every counting source with its kind, by source name."""
    kinds = {name: kind_of(name, facts) for name, facts in sorted(sources.items())}
    return {name: kind for name, kind in kinds.items() if kind is not None}
