"""POST /v1/plan, POST /v1/plan/explain, GET /v1/plans."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Depends, Request

from serving.api.deps import PlanReadsDep, PrincipalDep, RequestLogDep
from serving.api.routes import API_PREFIX
from serving.contract.plan_models import ExplainResponse, PlanRequest, PlanResponse, PlansResponse
from serving.plans import planner
from serving.plans.plans_file import PlansConfig

router = APIRouter(prefix=API_PREFIX, tags=["plans"])


def get_plans(request: Request) -> PlansConfig:
    """The plans in force: a plain `def`, so FastAPI runs it in its thread pool (it reads the store every
    few seconds: serving/feedback/tuned_plans.py)."""
    return request.app.state.plans.current()  # type: ignore[no-any-return]


PlansDep = Annotated[PlansConfig, Depends(get_plans)]


@router.post(
    "/plan",
    response_model=PlanResponse,
    description=(
        "A balanced, deterministic, cited context for a query: the query is classified, hybrid search "
        "retrieves candidates, the plan's category quotas are filled by score and backfilled, within the "
        "score threshold, character budget and total."
    ),
)
def plan(
    body: PlanRequest,
    reads: PlanReadsDep,
    log: RequestLogDep,
    principal: PrincipalDep,
    plans: PlansDep,
    background: BackgroundTasks,
) -> PlanResponse:
    response = planner.plan_context(reads, plans, body, principal)
    if log.enabled:
        background.add_task(log.plan, body, response)
    return response


@router.post(
    "/plan/explain",
    response_model=ExplainResponse,
    description="Why each candidate was taken or skipped by the plan.",
)
def explain(body: PlanRequest, reads: PlanReadsDep, principal: PrincipalDep, plans: PlansDep) -> ExplainResponse:
    return planner.explain(reads, plans, body, principal)


@router.get("/plans", response_model=PlansResponse, description="The configured plans, resolved per query type.")
def list_plans(plans: PlansDep) -> PlansResponse:
    return planner.list_plans(plans)
