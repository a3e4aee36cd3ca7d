"""MCP resources: the sources the caller may see, with their versions and freshness (a list, and one per
source through a template), and the retrieval plans; read as the caller the gate admitted (serving/mcp/gate.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serving.contract.errors import PublicError, public_error
from serving.mcp.budget import compact
from serving.mcp.gate import current_caller, protocol_error
from serving.mcp.server import SecragMCP
from serving.plans.plans_file import PlansConfig
from serving.service import Service

SOURCES_URI = "secrag://sources"
SOURCE_URI = "secrag://sources/{name}"
PLANS_URI = "secrag://plans"
JSON = "application/json"
# What the list says of each source; its own resource has every field of GET /v1/sources.
SUMMARY = ("name", "category", "kind", "version", "fresh", "stale_reason", "last_sync", "records", "state")


def add_resources(
    server: SecragMCP,
    get_service: Callable[[], Service],
    plans: Callable[[], PlansConfig],
) -> None:
    from serving.plans.planner import list_plans

    def gated(read: Callable[[Any], Any]) -> Any:  # noqa: ANN401 - read(principal): a model or a JSON value
        try:
            value = read(current_caller().principal)
        except Exception as exc:  # noqa: BLE001 - every failure is mapped, none leaks internals
            raise protocol_error(public_error(exc)) from None
        return value.model_dump(mode="json") if hasattr(value, "model_dump") else value

    def listed() -> list[dict[str, Any]]:
        return list(gated(lambda principal: get_service().source_reads.sources(principal))["sources"])

    def sources() -> str:
        summary = [{**{k: s[k] for k in SUMMARY}, "uri": SOURCE_URI.format(name=s["name"])} for s in listed()]
        return compact({"sources": summary})

    def source(name: str) -> str:
        visible = listed()
        found = next((s for s in visible if s["name"].casefold() == name.casefold()), None)
        if found is None:
            valid = ", ".join(s["name"] for s in visible)
            error = PublicError(404, f"no source {name[:80]!r}", kind="not_found")
            raise protocol_error(error, f"valid sources: {valid}")
        return compact(found)

    server.resource(
        SOURCES_URI,
        name="sources",
        title="Sources",
        description="The sources you may see: category, kind, served version, freshness (fresh, stale_reason), "
        f"last sync, record count and state; each with the URI of its own resource ({SOURCE_URI}).",
        mime_type=JSON,
    )(sources)
    server.resource(
        SOURCE_URI,
        name="source",
        title="One source",
        description="One source as GET /v1/sources gives it: upstream, versions (served, last seen), freshness, "
        "last attempt and its outcome, poll interval.",
        mime_type=JSON,
    )(source)
    server.resource(
        PLANS_URI,
        name="plans",
        title="Retrieval plans",
        description="The retrieval plans the `plan` tool uses (GET /v1/plans): the categories they mix and, per "
        "query type, the plan's quotas, boosts and budget.",
        mime_type=JSON,
    )(lambda: compact(gated(lambda principal: list_plans(plans()))))
