"""POST /v1/plan's implementation: classify, retrieve candidates by hybrid search, select, render."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from serving.access.keys import Principal
from serving.contract.plan_models import (
    Citation,
    Decision,
    ExplainResponse,
    PlanMetrics,
    PlanRequest,
    PlanResponse,
    PlansResponse,
    SelectedChunk,
)
from serving.contract.requests import ReturnOptions, SearchRequest
from serving.plans.classify import classify
from serving.plans.context import metrics, render
from serving.plans.noise import trim
from serving.plans.plans_file import QUERY_TYPES, Plan, PlansConfig
from serving.plans.reads import PlanReads
from serving.plans.schema_records import schema_candidates
from serving.plans.selection import Candidate, Selection, select
from serving.plans.telemetry import shipped_telemetry

MAX_TEXT_CHARS = 4000
MAX_CANDIDATES = 400
SCHEMA_PLAN = "schema"  # query-writing intents: telemetry schemas first, then detections over them


@dataclass(frozen=True)
class _Run:
    query_type: str
    signals: tuple[str, ...]
    name: str
    plan: Plan
    total: int
    candidates: list[Candidate]
    selection: Selection
    corrections: dict[str, str]


def _retrieve(reads: PlanReads, config: PlansConfig, req: PlanRequest, principal: Principal) -> _Run:
    reads.limits.check_query(req.query)
    classified = classify(req.query, config.classification)
    name = req.plan or classified.query_type
    if name not in QUERY_TYPES:
        from serving.contract.errors import InvalidField

        raise InvalidField(["body", "plan"], f"unknown plan {name!r}; valid plans: {', '.join(QUERY_TYPES)}")
    plan = config.resolve(name)
    total = req.total_chunks or plan.total_chunks
    wanted = min(MAX_CANDIDATES, total * plan.candidates_multiplier)
    search = SearchRequest.model_validate(
        {
            "query": req.query,
            "k": min(50, wanted),
            "filters": req.filters,
            "group_by_doc": plan.max_chunks_per_doc == 1,
            "return": ReturnOptions(
                text=True, snippets=False, max_text_chars=MAX_TEXT_CHARS, metadata=name == SCHEMA_PLAN
            ),
        }
    )
    search = search.model_copy(update={"k": wanted})  # internal: candidate pools may exceed the public k cap
    found = reads.searcher.search(search, principal)
    hits = found.results
    sources = reads.catalog.source_facts()  # cached: no read per plan
    candidates = []
    for hit in hits:
        info = sources.get(hit.source)
        candidates.append(
            Candidate(
                chunk_id=hit.chunk_id,
                doc_id=hit.doc_id,
                source=hit.source,
                category=config.category_of(info.category if info else None, info.kind if info else "online"),
                score=hit.score,
                title=hit.title,
                text=hit.text or "",
                url=hit.url or "",
                source_version=(info.version or "") if info else "",
                techniques=tuple(hit.techniques),
                location=hit.location,
            )
        )
    if name == SCHEMA_PLAN:  # the schema records each detection found reads, beside it
        versions = {n: s.version or "" for n, s in sources.items()}  # only the hits' sources are cited
        taken = {c.doc_id for c in candidates}
        candidates += schema_candidates(reads.documents, shipped_telemetry(), hits, principal, taken, versions)
    return _Run(
        classified.query_type,
        classified.signals,
        name,
        plan,
        total,
        candidates,
        select(candidates, plan, total),
        found.corrections,
    )


def plan_context(reads: PlanReads, config: PlansConfig, req: PlanRequest, principal: Principal) -> PlanResponse:
    """The selected chunks, the cited context and how good it is."""
    started = time.perf_counter()
    run = _retrieve(reads, config, req, principal)
    passages = [replace(c, text=trim(c.text, req.noise_filter)) for c in run.selection.selected]
    context, citations = render(passages, list(config.categories))
    number = {c.doc_id: c.number for c in citations}
    system_prompts, grounded = _instructions(config, citations, req)
    selected = [
        SelectedChunk(
            citation=number[c.doc_id],
            chunk_id=c.chunk_id,
            doc_id=c.doc_id,
            source=c.source,
            category=c.category,
            title=c.title,
            url=c.url or None,
            source_version=c.source_version or None,
            score=c.score,
            adjusted_score=round(c.adjusted, 6),
            text=c.text,
            location=c.location,
        )
        for c in passages
    ]
    m = metrics(req.query, run.selection.selected, run.selection.quotas, top_score_scale=1.0)
    return PlanResponse(
        query_type=run.query_type,
        signals=list(run.signals),
        plan_name=run.name,
        plan={**run.plan.model_dump(), "total_chunks": run.total},
        quotas=run.selection.quotas,
        selected=selected,
        context=context,
        citations=citations,
        system_prompts=system_prompts,
        grounded_only=grounded,
        prompt=_prompt(system_prompts, config.grounded_instruction if grounded else "", context),
        metrics=PlanMetrics(**m),
        candidates=len(run.candidates),
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _instructions(config: PlansConfig, citations: Sequence[Citation], req: PlanRequest) -> tuple[list[str], bool]:
    """The cited collections' system prompts in order of first citation (each once), and whether the
    answer must be grounded: the request says so, else any cited collection does."""
    prompts: list[str] = []
    grounded = False
    for citation in citations:
        collection = config.collections.get(citation.source)
        if collection is None:
            continue
        grounded = grounded or collection.grounded_only
        if collection.system_prompt and collection.system_prompt not in prompts:
            prompts.append(collection.system_prompt)
    return prompts, grounded if req.grounded_only is None else req.grounded_only


def _prompt(system_prompts: Sequence[str], grounded: str, context: str) -> str:
    """The documented order: system prompts, the grounded-only instruction, then the context (the passages
    with their [n] and the numbered sources list)."""
    return "\n\n".join(part.strip() for part in (*system_prompts, grounded, context) if part.strip()) + "\n"


def explain(reads: PlanReads, config: PlansConfig, req: PlanRequest, principal: Principal) -> ExplainResponse:
    """Why each candidate was taken or skipped."""
    run = _retrieve(reads, config, req, principal)
    return ExplainResponse(
        query_type=run.query_type,
        signals=list(run.signals),
        plan_name=run.name,
        quotas=run.selection.quotas,
        corrections=run.corrections,
        decisions=[
            Decision(
                chunk_id=d.chunk_id,
                doc_id=d.doc_id,
                category=d.category,
                score=d.score,
                adjusted_score=round(d.adjusted, 6),
                taken=d.taken,
                reason=d.reason,
            )
            for d in run.selection.decisions
        ],
    )


def list_plans(config: PlansConfig) -> PlansResponse:
    return PlansResponse(
        categories=config.categories, plans={name: config.resolve(name).model_dump() for name in QUERY_TYPES}
    )
