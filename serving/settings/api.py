"""The API's files and front door: search tuning, plans, API keys, the MCP budget, warm-up, upstream refetch."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings

from secrag.files.package_data import package_path
from secrag.settings import SETTINGS_CONFIG, doc_default
from serving.contract.mcp_budget import DEFAULT_MCP_CHARS, MAX_CHARS, MIN_CHARS


def default_plans_file() -> Path:
    """The retrieval plans secrag ships (serving/plans/plans.yaml)."""
    return package_path("serving.plans", "plans.yaml")


class ApiSettings(BaseSettings):
    """What the API serves and from which files: search tuning, plans, API keys, MCP, warm-up, upstream refetch."""

    model_config = SETTINGS_CONFIG

    search_config: Path = Field(
        default_factory=lambda: package_path("serving.search", "search.yaml"),
        json_schema_extra=doc_default("`serving/search/search.yaml`"),
        description="Search tuning (source boosts, score and vector thresholds, leg weights, the voter legs), laid "
        "over the shipped `serving/search/search.yaml`: a file of your own states only what it changes.",
    )
    plans_file: Path = Field(
        default_factory=default_plans_file,
        json_schema_extra=doc_default("`serving/plans/plans.yaml`"),
        description="Retrieval plans (validated at start-up).",
    )
    api_keys_file: Path | None = Field(
        default=None, description="YAML mapping API keys to tenant/user/groups; unset = public documents only."
    )
    mcp_enabled: bool = Field(default=True, description="Serve the MCP tools at /mcp.")
    mcp_max_chars: int = Field(
        default=DEFAULT_MCP_CHARS,
        ge=MIN_CHARS,
        le=MAX_CHARS,
        description="The response budget, in characters of compact JSON, of an MCP tool call that sets no "
        "`max_chars`: a larger answer is fitted to it as a budgeted one is, its `budget` field saying what was cut. "
        "Whatever the budget, a tool's answer also stays within a quarter of SECRAG_MAX_ANSWER_BYTES in characters "
        "(a character is at most four bytes).",
    )
    mcp_allowed_hosts: list[str] = Field(
        default_factory=lambda: ["127.0.0.1:*", "localhost:*", "[::1]:*", "testserver"],
        json_schema_extra=doc_default("loopback hosts"),
        description="Host headers the MCP endpoint accepts (DNS-rebinding protection).",
    )
    warm_up: bool = Field(
        default=True,
        description="Run five searches (one per leg and query class) before taking requests, so the first "
        "callers after a restart do not pay for the encoder's first run, the catalog caches and cold index pages.",
    )
    upstream_raw_base: str = Field(
        default="https://raw.githubusercontent.com", description="Where /v1/docs/{id}/upstream reads repository files."
    )
    upstream_max_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Size cap of one upstream refetch (413 above)."
    )
    upstream_timeout: float = Field(
        default=5.0, gt=0, le=60, description="Time cap of one live upstream refetch (504)."
    )
    max_live_refetch: int = Field(
        default=5,
        ge=1,
        le=100,
        description="Most `doc_ids` one live `POST /v1/docs/upstream` reads (each may take the upstream timeout); "
        "the ids beyond are listed in `errors` with status 429. Stored forms: up to 100.",
    )
