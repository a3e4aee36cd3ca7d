"""Every REST operation as an MCP tool (streamable HTTP at /mcp, or stdio with `secrag mcp`), with the
resources (serving/mcp/resources.py) and prompts (serving/mcp/prompts.py).

A tool's parameters are its REST request model's fields, with the same types, limits and
descriptions (the tool is built from the model, so the two cannot drift), and it calls the same
part of the service (serving/service.py) under the same gate (API key, rate, slots: serving/mcp/gate.py, which
every MCP method passes, listings and prompts included). Failures become the
public error REST would answer with, structured (serving/mcp/errors.py). Every tool takes an optional response
budget, `max_chars` (serving/mcp/budget.py). `search` also has one alias per mode: fts, vector, hybrid, fuzzy.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from secrag.version import version as server_version
from serving.access.quotas import Caller, Gate
from serving.access.request_limits import RequestLimits
from serving.contract.changes import ChangesQuery
from serving.contract.coverage_models import CoverageRequest
from serving.contract.layer_models import CompareRequest
from serving.contract.limits import NARROW
from serving.contract.lookup_models import LookupQuery
from serving.contract.map_models import MapRequest
from serving.contract.plan_models import PlanRequest
from serving.contract.requests import IdsRequest, SearchRequest
from serving.contract.responses import StatsResponse
from serving.contract.upstream_requests import UpstreamQuery, UpstreamRequest
from serving.layers.compare import compare_layers
from serving.mcp.budget_paths import compact
from serving.mcp.calls import MaxChars, as_json, budget_of, field_annotation, run_safely, tool_signature, within
from serving.mcp.gate import GateMiddleware, current_caller
from serving.mcp.prompts import add_prompts
from serving.mcp.resources import add_resources
from serving.mcp.server import SecragMCP
from serving.observability.in_flight import InFlight
from serving.plans.plans_file import PlansConfig
from serving.service import Service

Run = Callable[[Any, Caller], Any]  # (validated request, caller) -> a pydantic model or a dict
MODES = ("fts", "vector", "hybrid", "fuzzy")
BUDGET = "max_chars"  # every tool's optional response budget (serving/mcp/budget.py)


def _budget() -> list[inspect.Parameter]:
    return [inspect.Parameter(BUDGET, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=MaxChars)]


class _Tools:
    """Builds the tools over one service getter; their caller is the gate's (serving/mcp/gate.py)."""

    def __init__(self, server: MCPServer, get_service: Callable[[], Service]) -> None:
        self.server = server
        self.get_service = get_service

    def _call(
        self, name: str, run: Callable[[Caller], Any], max_chars: int | None = None
    ) -> dict[str, Any] | CallToolResult:
        def call() -> tuple[dict[str, Any], str]:
            answer = as_json(run(current_caller()))  # admitted, with its slot, by serving/mcp/gate.py
            text = compact(answer)  # serialised once: the bound's size, and the text itself when it fits
            # SECRAG_MAX_ANSWER_BYTES' last line of defence, on the whole answer before any max_chars fitting
            self.get_service().limits.check_answer(len(text.encode()), NARROW)
            return answer, text

        tool = self.server._tool_manager.get_tool(name)  # noqa: SLF001 - its input schema names valid values
        done = run_safely(call, name, tool.parameters if tool else None)
        if isinstance(done, CallToolResult):
            return done
        service = self.get_service()
        budget = budget_of(max_chars, service.settings.mcp_max_chars, service.limits.max_answer_bytes)
        return within(*done, budget, name)

    def from_model(self, name: str, description: str, model: type[BaseModel], run: Run, **fixed: Any) -> None:
        """A tool whose parameters are model's fields (less `fixed` ones), validated by the model itself."""
        params = [
            inspect.Parameter(
                key,  # the JSON name is the field's alias (e.g. `return`), as in the REST body
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty
                if field.is_required()
                else field.get_default(call_default_factory=True),
                annotation=field_annotation(field),
            )
            for key, field in model.model_fields.items()
            if key not in fixed
        ] + _budget()

        def tool(**arguments: Any) -> dict[str, Any] | CallToolResult:  # noqa: ANN401
            arguments.pop("ctx", None)  # FastMCP's context: the caller comes from the gate
            max_chars = arguments.pop(BUDGET, None)
            values = {k: v.model_dump() if isinstance(v, BaseModel) else v for k, v in arguments.items()}
            return self._call(name, lambda caller: run(model.model_validate({**values, **fixed}), caller), max_chars)

        tool.__signature__, tool.__annotations__ = tool_signature(params)  # type: ignore[attr-defined]
        tool.__name__ = name
        self.server.add_tool(tool, name=name, description=description)

    def by_id(self, name: str, description: str, param: str, run: Callable[[str, Caller], Any]) -> None:
        """A tool taking one identifier (the REST path parameter)."""

        def tool(**arguments: Any) -> dict[str, Any] | CallToolResult:  # noqa: ANN401
            arguments.pop("ctx", None)
            value, max_chars = arguments[param], arguments.pop(BUDGET, None)
            return self._call(name, lambda caller: run(value, caller), max_chars)

        annotation = Annotated[str, Field(min_length=1, max_length=512, description=f"the {param.replace('_', ' ')}")]
        tool.__signature__, tool.__annotations__ = tool_signature(  # type: ignore[attr-defined]
            [inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, annotation=annotation), *_budget()]
        )
        tool.__name__ = name
        self.server.add_tool(tool, name=name, description=description)

    def plain(self, name: str, description: str, run: Callable[[Caller], Any]) -> None:
        """A tool without parameters."""

        def tool(**arguments: Any) -> dict[str, Any] | CallToolResult:  # noqa: ANN401
            arguments.pop("ctx", None)
            return self._call(name, run, arguments.pop(BUDGET, None))

        tool.__signature__, tool.__annotations__ = tool_signature(_budget())  # type: ignore[attr-defined]
        tool.__name__ = name
        self.server.add_tool(tool, name=name, description=description)


def build_mcp(
    get_service: Callable[[], Service],
    gate: Gate,
    plans: Callable[[], PlansConfig],
    *,
    default_key: str | None = None,
    limits: RequestLimits | None = None,
    in_flight: InFlight | None = None,
) -> SecragMCP:
    """An MCP server with one tool per REST operation (and per-mode search aliases).

    default_key is the API key of stdio callers (HTTP callers send their own); `limits` (this
    deployment's request limits) are written into the tools' input schemas, as into the OpenAPI document;
    `in_flight` counts its requests among the API's in flight (serving/observability/in_flight.py).
    """
    from serving.mapping import mapper
    from serving.plans.planner import explain, list_plans, plan_context

    server = SecragMCP(
        name="secrag",
        version=server_version(),
        instructions=(
            "Search security knowledge (ATT&CK, Sigma, Atomic Red Team, CISA KEV, LOLBAS, ...). "
            "Use `search` (or `plan` for a balanced, cited context) first, then `get_documents` for full bodies; "
            "`map` gives the ATT&CK techniques of a whole text (a threat report), `coverage` what the store holds "
            "for techniques, a group or a Navigator layer, `compare_layers` one layer minus, plus or intersected "
            "with another, `lookup` which records hold a hash, file name or path. Every tool takes "
            "`max_chars` to bound its answer (a default applies; a `budget` field says what was cut). "
            "Resources: secrag://sources "
            "(versions, freshness), secrag://plans. Prompts: map_report, triage_artefact, coverage_for_group."
        ),
    )
    server.middleware.append(GateMiddleware(gate, default_key, in_flight))  # every method: key, rate, slot
    tools = _Tools(server, get_service)

    def plan(req: PlanRequest, caller: Caller) -> Any:  # noqa: ANN401
        service = get_service()
        response = plan_context(service.plan_reads(), plans(), req, caller.principal)
        service.request_log.plan(req, response, endpoint="mcp:plan")
        return response

    def search(req: SearchRequest, caller: Caller) -> Any:  # noqa: ANN401
        service = get_service()
        service.limits.check_search(req)
        response = service.model.current().search(req, caller.principal)
        service.request_log.search(req, response, endpoint="mcp:search")  # a no-op unless the query log is on
        return response

    def map_text(req: MapRequest, caller: Caller) -> Any:  # noqa: ANN401
        service = get_service()
        return mapper.map_text(
            service.model.current(),
            service.limits,
            service.map_capacity,
            req,
            caller.principal,
            admit=functools.partial(gate.searches, caller),
            caller=caller.bucket,
        )

    def stats(caller: Caller) -> Any:  # noqa: ANN401
        service = get_service()
        figures = service.source_reads.stats(caller.principal, service.searcher, service.metrics.summary())
        return StatsResponse.model_validate(figures)

    tools.from_model(
        "search",
        "Search the chunks of the documents the caller may see (POST /v1/search): hybrid by default, or "
        "full-text, vector or fuzzy; filters, strategy, weights, offset and min_score as in the REST API.",
        SearchRequest,
        search,
    )
    for mode in MODES:
        tools.from_model(mode, f"`search` with mode={mode} (same parameters).", SearchRequest, search, mode=mode)
    tools.from_model(
        "plan",
        "A balanced, cited context for a question (POST /v1/plan): techniques, detections, tests, "
        "forensic artifacts and vulnerabilities mixed by a retrieval plan.",
        PlanRequest,
        plan,
    )
    tools.from_model(
        "explain",
        "Why each candidate was taken or skipped by the plan (POST /v1/plan/explain).",
        PlanRequest,
        lambda req, caller: explain(get_service().plan_reads(), plans(), req, caller.principal),
    )
    tools.from_model(
        "map",
        "The ATT&CK techniques a text describes, from a sentence to a whole report (POST /v1/map): each with its "
        "score, the sentences supporting it (offsets into the text) and the passages behind it, and an ATT&CK "
        "Navigator layer of them all (layer=false leaves it out); min_score and limit as in the REST API.",
        MapRequest,
        map_text,
    )
    tools.from_model(
        "coverage",
        "What the store holds for ATT&CK techniques (POST /v1/coverage): given technique ids, an ATT&CK group, "
        "software or campaign (`actor`) or a tactic (`tactic`, `platforms`), per technique the count and first "
        "items of detections (per rule set), tests, countermeasures and the caller's own notes, ATT&CK's analytics "
        "per platform (`platforms` narrows them) with the log sources they need and, per log source, the Sigma "
        "logsources, Elastic indices, Splunk data sources and OSSEM/ECS schemas that correspond and how many the "
        "store holds (with analytics=true), the gaps (among them techniques with an analytic but no "
        "detection, and analytics no held schema describes), and an ATT&CK Navigator layer; `limit` techniques at a "
        "time (`next_cursor`, passed back as `cursor`, asks for the next ones; `total` counts them all).",
        CoverageRequest,
        lambda req, caller: get_service().coverage.coverage(req, caller.principal),
    )
    tools.from_model(
        "compare_layers",
        "Two ATT&CK Navigator layers (format 4.5 or 4.4) compared as technique sets (POST /v1/layers/compare): "
        "`left` minus, plus (union) or intersected with `right`, as a layer whose comments say which layer each "
        "technique came from; scores kept as `scores` says; unknown, revoked and deprecated techniques reported. "
        "E.g. a group's coverage layer minus a layer of your rules: the group's techniques your rules miss.",
        CompareRequest,
        lambda req, caller: compare_layers(get_service().layers, req),
    )
    tools.from_model(
        "lookup",
        "Exact artefact lookups (GET /v1/lookup): per hash (MD5, SHA-1, SHA-256, authenticode), file name or Windows "
        "path in `value` (1 to 100), the records holding it (LOLDrivers, LOLBAS, GTFOBins, HijackLibs) with the "
        "fields it is in (kind: md5, sha1, sha256, authentihash, imphash, rich_header_hash, file_name, path); a "
        "value no record holds has none. Windows names, paths and hashes match in any case, Unix names exactly.",
        LookupQuery,
        lambda req, caller: get_service().artefacts.lookup(req, caller.principal),
    )
    tools.plain("list_plans", "The configured retrieval plans (GET /v1/plans).", lambda caller: list_plans(plans()))
    tools.from_model(
        "get_documents",
        "Full documents by id, e.g. mitre_attack:T1003 (POST /v1/docs); unknown ids are listed as missing.",
        IdsRequest,
        lambda req, caller: get_service().reads.documents(req.ids, caller.principal),
    )
    tools.by_id(
        "get_document",
        "One document (GET /v1/docs/{doc_id}).",
        "doc_id",
        lambda doc_id, caller: get_service().reads.document(doc_id, caller.principal),
    )
    tools.from_model(
        "get_chunks",
        "Chunks by id (POST /v1/chunks); unknown ids are listed as missing.",
        IdsRequest,
        lambda req, caller: get_service().reads.chunks(req.ids, caller.principal),
    )
    tools.by_id(
        "get_chunk",
        "One chunk (GET /v1/chunks/{chunk_id}).",
        "chunk_id",
        lambda chunk_id, caller: get_service().reads.chunk(chunk_id, caller.principal),
    )
    tools.from_model(
        "get_upstream",
        "The upstream form of one document's record at its published version: one Sigma file, one STIX "
        "object, one feed entry (GET /v1/docs/{doc_id}/upstream).",
        UpstreamQuery,
        lambda req, caller: get_service().reads.upstream(
            req.doc_id, caller.principal, live=req.live, columns=req.columns
        ),
    )
    tools.from_model(
        "get_upstreams",
        "The upstream forms of several documents' records (POST /v1/docs/upstream); each fails on its own.",
        UpstreamRequest,
        lambda req, caller: get_service().reads.upstream_batch(req, caller.principal),
    )
    tools.from_model(
        "changes",
        "What each publish added, modified and removed, newest first, of the documents the caller may see "
        "(GET /v1/changes): since an ISO time or a source version, by source, a page at a time.",
        ChangesQuery,
        lambda req, caller: get_service().change_feed.page(req, caller.principal),
    )
    tools.plain(
        "list_sources",
        "Every source with its served version, freshness, record count and state (GET /v1/sources).",
        lambda caller: get_service().source_reads.sources(caller.principal),
    )
    tools.plain(
        "stats",
        "Store statistics: documents, chunks, embeddings per source and model, freshness (GET /v1/stats).",
        stats,
    )
    if limits is not None:
        for tool in server._tool_manager.list_tools():  # noqa: SLF001 - the schemas MCP lists, as built
            limits.state_tool(tool.parameters)
    add_resources(server, get_service, plans)
    add_prompts(server)
    return server
