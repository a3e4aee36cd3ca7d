"""The named parameters of a search's statement (sql/queries/serving.sql), from the request, its analysis
and its plan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from secrag.attack_domains import ATTACK_SOURCES, DEFAULT_DOMAIN, DOMAINS, PROCEDURE_SOURCES, TECHNIQUE_SOURCES
from serving.access.keys import Principal
from serving.contract.requests import SearchFilters, SearchRequest
from serving.search import analysis as logic
from serving.search.catalog import Catalog
from serving.search.search_file import Voters
from serving.search.statements import VOTER_LEGS


def statement_params(
    req: SearchRequest,
    analysis: logic.QueryAnalysis,
    plan: logic.Plan,
    qvec: Any,  # noqa: ANN401 - the encoder's vector
    principal: Principal,
    catalog: Catalog,
) -> dict[str, Any]:
    """The named parameters of the search statement (sources are resolved on the connection, the voter legs'
    and the label leg's are added by the searcher)."""
    filters = req.filters
    ids = catalog.technique_ids()
    pinned = req.mode != "vector"  # exact identifiers are put first except in vector-only search
    names = catalog.source_names()
    return {
        **principal.params(),
        "sources": filters.sources,
        "doc_ids": filters.doc_ids,
        "techniques": logic.expand_techniques(filters.techniques, ids) if filters.techniques else None,
        "platforms": filters.platforms,
        "domains": filters.domains,
        "domain_techniques": domain_techniques(filters.domains, catalog) if filters.domains else None,
        "attack_sources": list(ATTACK_SOURCES),
        "tags_any": filters.tags_any,
        "tags_all": filters.tags_all,
        "updated_after": filters.updated_after,
        "updated_before": filters.updated_before,
        "created_after": filters.created_after,
        "created_before": filters.created_before,
        "doc_filters": document_filters(filters),
        "fts_text": analysis.fts_text,
        "ident_text": analysis.ident_text,
        "fuzzy_text": req.query.strip()[:64],
        "has_ident": bool(analysis.ident_text),
        "ident_tier": analysis.is_identifier,
        "qvec": qvec,
        "fts_k": plan.fts_k,
        "vec_k": plan.vec_k,
        "fuzzy_k": plan.fuzzy_k,
        "candidates_k": req.candidates_k,
        "window": plan.window,
        "group_by_doc": req.group_by_doc,
        "exact_ids": logic.exact_doc_ids(analysis.exact_forms, names) if pinned else [],
        "child_ids": logic.exact_doc_ids(logic.child_forms(analysis, ids), names) if pinned else [],
        "pool_fts": False,
        "vec_ids": None,  # the vector leg's nearest when the API takes them (serving/search/source_vectors.py)
        "vec_sims": None,
    }


def document_filters(filters: SearchFilters) -> bool:
    """Whether a filter reads the document (techniques, platforms, domains, tags, dates), not only its chunks."""
    return any(
        value is not None
        for value in (
            filters.techniques,
            filters.platforms,
            filters.domains,
            filters.tags_any,
            filters.tags_all,
            filters.updated_after,
            filters.updated_before,
            filters.created_after,
            filters.created_before,
        )
    )


def domain_techniques(domains: Sequence[str], catalog: Catalog) -> list[str]:
    """The technique ids (retired ones too) of the given ATT&CK domains."""
    wanted = set(domains)
    return [tid for tid, domain in catalog.technique_domains().items() if domain in wanted]


def voter_exclusions(filters: SearchFilters) -> list[str]:
    """The sources whose documents never vote in a voter leg's walk: the ATT&CK technique and procedure sources of
    the domains not asked (`domains`; Enterprise's when none is), so a search's neighbours vote as before Mobile
    and ICS were sources unless it asks for them."""
    asked = set(filters.domains or (DEFAULT_DOMAIN,))
    return [s for d in DOMAINS if d not in asked for s in (TECHNIQUE_SOURCES[d], PROCEDURE_SOURCES[d])]


def procedure_sources(filters: SearchFilters) -> list[str] | None:
    """The procedures leg's voting sources for a `domains` filter (those domains' procedure examples); None:
    search.yaml's."""
    return [PROCEDURE_SOURCES[d] for d in dict.fromkeys(filters.domains)] if filters.domains else None


def voter_params(filters: SearchFilters, voters: Mapping[str, Voters]) -> dict[str, Any]:
    """The voter legs' parameters: search.yaml's walk sizes and sources per leg (the asked domains' procedure
    examples under a `domains` filter), the sources that never vote, and no held nearest documents yet
    (serving/search/source_vectors.py fills them)."""
    params: dict[str, Any] = {}
    for leg, prefix in VOTER_LEGS.items():
        params[f"{prefix}_chunks"], params[f"{prefix}_docs"] = voters[leg].chunks, voters[leg].documents
        params[f"{prefix}_sources"] = voters[leg].sources
        params[f"{prefix}_exclude"] = voter_exclusions(filters)
        params[f"{prefix}_near_docs"] = params[f"{prefix}_near_sims"] = None
    if (domain_procedures := procedure_sources(filters)) is not None:
        params[f"{VOTER_LEGS['procedures']}_sources"] = domain_procedures
    return params
