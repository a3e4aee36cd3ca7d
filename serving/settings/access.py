"""Who the API logs in as (the reader and query-log roles, on the primary or a replica) and who may call it."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

from secrag.settings import SETTINGS_CONFIG, doc_default


class AccessSettings(BaseSettings):
    """Who the API logs in as (on the primary or a streaming replica), and who may call it."""

    model_config = SETTINGS_CONFIG

    reader_database_url: str | None = Field(
        default=None,
        json_schema_extra=doc_default("the secrag database as `secrag_reader`"),
        description="The API's login (no password: right for the embedded server; with DATABASE_URL, see "
        "sql/roles.sql).",
    )
    querylog_database_url: str | None = Field(
        default=None,
        json_schema_extra=doc_default("the secrag database as `secrag_querylog`"),
        description="The query log's login (INSERT on `query_log` only). It needs a server that takes writes, the "
        "primary: with the query log on, the API refuses to start when this URL (by default DATABASE_URL's "
        "server) is a read-only standby.",
    )
    replica_max_lag_seconds: float = Field(
        default=30.0,
        ge=0,
        description="When the reader URL is a streaming replica: /readyz answers 503 (check `replica_lag`) while "
        "its replay is further behind the primary than this, or its lag is unknown, so a standby that stopped "
        "replaying leaves the load balancer instead of serving revoked access and removed documents; 0 = no "
        "limit. The lag is shown by /readyz and the `secrag_replica_lag_seconds` metric either way.",
    )
    allow_privileged_reader: bool = Field(
        default=False,
        description="Serve even when the API's login could write or escalate (superuser, table owner); "
        "development only.",
    )
    require_api_key: bool = Field(
        default=False,
        description="Refuse anonymous callers (401) on every /v1 operation and every MCP request (initialize, "
        "listings, prompts, resources and tool calls alike); /healthz, /readyz and /metrics stay open.",
    )
