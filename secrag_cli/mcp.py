"""`secrag mcp`: the MCP tools over stdio, for agents that start the server as a local process."""

from __future__ import annotations

import click


@click.command("mcp")
@click.option(
    "--api-key",
    envvar="SECRAG_MCP_API_KEY",
    default=None,
    help="Act as this API key (its tenant's documents, its quotas); unset: an anonymous caller.",
)
def mcp(api_key: str | None) -> None:
    """Serve every API operation as an MCP tool on stdin/stdout (logs go to stderr)."""
    from serving.access.keys import load_api_keys
    from serving.access.quotas import Gate
    from serving.api.app import start_service, stop_service
    from serving.feedback.tuned_plans import TunedPlans, stored_thresholds
    from serving.mcp.tools import build_mcp
    from serving.observability.prometheus import Exposition
    from serving.plans.plans_file import load_plans
    from serving.settings import get_serving_settings

    settings = get_serving_settings()
    gate = Gate(load_api_keys(settings.api_keys_file), settings)
    if api_key:
        gate.caller(api_key, "stdio")  # an unknown key fails here, once, not on every tool call
    plans = load_plans(settings.plans_file)
    service = start_service(settings, Exposition())
    tuned = TunedPlans(plans, read=lambda: stored_thresholds(service.pool, service.queries))
    try:
        build_mcp(
            lambda: service,
            gate,
            tuned.current,
            default_key=api_key,
            limits=service.limits,
            in_flight=service.metrics.in_flight,
        ).run("stdio")
    finally:
        stop_service(service)
