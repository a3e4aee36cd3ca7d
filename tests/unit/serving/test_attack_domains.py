"""ATT&CK's domains at the HTTP edge: one vocabulary with the core's, the requests' defaults, the procedures leg
of a `domains` filter, and map evidence from every domain's technique documents."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from secrag.attack_domains import DOMAINS, PROCEDURE_SOURCES, TECHNIQUE_SOURCES
from serving.contract.coverage_models import CoverageRequest
from serving.contract.map_models import MapRequest
from serving.contract.requests import AttackDomain, SearchFilters
from serving.contract.responses import LegScores, SearchResult
from serving.mapping.evidence import technique_of
from serving.search.parameters import document_filters, procedure_sources


def test_the_contract_names_the_core_s_domains() -> None:
    assert get_args(AttackDomain) == DOMAINS
    assert set(TECHNIQUE_SOURCES) == set(PROCEDURE_SOURCES) == set(DOMAINS)


def test_map_and_coverage_default_to_enterprise() -> None:
    assert MapRequest.model_validate({"text": "a b c"}).domain == "enterprise"
    assert CoverageRequest.model_validate({"tactic": "persistence"}).domain == "enterprise"
    assert CoverageRequest.model_validate({"tactic": "persistence", "domain": "mobile"}).domain == "mobile"
    with pytest.raises(ValidationError):
        MapRequest.model_validate({"text": "a b c", "domain": "pre"})


def test_a_domains_filter_reads_documents_and_names_the_procedures_leg_s_sources() -> None:
    assert procedure_sources(SearchFilters()) is None  # search.yaml's
    filters = SearchFilters.model_validate({"domains": ["ics", "mobile", "ics"]})
    assert procedure_sources(filters) == ["mitre_attack_ics_procedures", "mitre_attack_mobile_procedures"]
    assert document_filters(filters) and not document_filters(SearchFilters())
    for bad in ([], ["pre"], ["enterprise"] * 4):
        with pytest.raises(ValidationError):
            SearchFilters.model_validate({"domains": bad})


def _hit(doc_id: str, source: str) -> SearchResult:
    return SearchResult(
        doc_id=doc_id,
        chunk_id=f"{doc_id}#0",
        source=source,
        title="t",
        url=None,
        score=1.0,
        exact=False,
        scores=LegScores(),
        techniques=[],
        platforms=[],
    )


def test_every_domain_s_technique_documents_are_map_evidence() -> None:
    assert technique_of(_hit("mitre_attack:T1003.001", "mitre_attack")) == "T1003.001"
    assert technique_of(_hit("mitre_attack_mobile:T1624", "mitre_attack_mobile")) == "T1624"
    assert technique_of(_hit("mitre_attack_ics:T0800", "mitre_attack_ics")) == "T0800"
    assert technique_of(_hit("mitre_attack_ics:TA0107", "mitre_attack_ics")) is None  # a tactic
    assert technique_of(_hit("sigma:abc", "sigma")) is None


def test_a_name_of_two_domains_is_the_first_one_s() -> None:
    from serving.search.technique_names import TechniqueNames

    names = TechniqueNames.from_lookup({"T1055": "Process Injection", "T1631": "Process Injection"})
    assert names.find("process injection into lsass") == ("T1055",)
    mobile_first = TechniqueNames.from_lookup({"T1631": "Process Injection", "T1055": "Process Injection"})
    assert mobile_first.find("process injection") == ("T1631",)


def test_the_domains_not_asked_do_not_vote() -> None:
    from serving.search.parameters import voter_exclusions

    others = [
        "mitre_attack_mobile",
        "mitre_attack_mobile_procedures",
        "mitre_attack_ics",
        "mitre_attack_ics_procedures",
    ]
    assert voter_exclusions(SearchFilters()) == others
    assert voter_exclusions(SearchFilters.model_validate({"domains": ["enterprise", "ics"]})) == others[:2]
    assert voter_exclusions(SearchFilters.model_validate({"domains": ["enterprise", "mobile", "ics"]})) == []
