"""POST /v1/coverage."""

from __future__ import annotations

from fastapi import APIRouter

from serving.api.deps import CoverageDep, PrincipalDep
from serving.api.routes import API_PREFIX
from serving.contract.coverage_models import CoverageRequest, CoverageResponse
from serving.contract.error_responses import error_responses

router = APIRouter(prefix=API_PREFIX, tags=["coverage"])


@router.post(
    "/coverage",
    response_model=CoverageResponse,
    responses=error_responses(404),  # an actor or tactic with no known techniques
    description=(
        "What the store holds for ATT&CK techniques, given by id, as the techniques of an ATT&CK group, software "
        "or campaign (`actor`) or of a tactic on some platforms (`tactic`, `platforms`): per technique the count "
        "and first items of detections (per rule set), tests, countermeasures and the caller's own notes, the "
        "log sources its detections read with their telemetry schemas, with `analytics: true` ATT&CK's analytics "
        "per platform with the "
        "log sources they need (`log_sources`: the Sigma logsources, Elastic indices, Splunk data sources, ECS "
        "event categories and OSSEM/ECS schemas each corresponds to, and how many of them the store holds), the "
        "gaps (no detection; a test but no detection; a detection but no test; an analytic but no detection; "
        "analytics no held schema describes) and an ATT&CK Navigator layer (format 4.5) coloured by coverage. "
        "Counted from the documents' technique labels in one statement (the analytics in a second), over the "
        "documents the caller may see. A document's kind is its source's (serving/coverage/kinds.py): detections "
        "are the rule sets (sources of category detection), tests the attack simulations (category test), "
        "countermeasures D3FEND's defensive techniques and ATT&CK's mitigations, notes the caller's own folders. "
        "An id counts as the rule set writes it: a rule tagged with a revoked technique counts for that id, not "
        "its replacement; deprecated rules do not count. An answer is a page of `limit` techniques in technique "
        "order (`next_cursor` while more follow); its layer, gaps and log sources are the page's."
    ),
)
def coverage(body: CoverageRequest, counts: CoverageDep, principal: PrincipalDep) -> CoverageResponse:
    return counts.coverage(body, principal)
