"""Serving settings: the shared secrag settings plus the API's own knobs (env prefix SECRAG_)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from secrag.package_data import package_path
from secrag.settings import Settings
from serving.contract.requests import HARD_MAX_CANDIDATES, HARD_MAX_K, HARD_MAX_QUERY_CHARS


def default_plans_file() -> Path:
    """The retrieval plans secrag ships (serving/plans/plans.yaml)."""
    return package_path("serving.plans", "plans.yaml")


class ServingSettings(Settings):
    """Everything `secrag serve` reads; all fields come from SECRAG_* environment variables."""

    search_config: Path = Field(
        default_factory=lambda: package_path("serving.search", "search.yaml"),
        description="YAML with source boosts and per-query-type score thresholds.",
    )
    plans_file: Path = Field(
        default_factory=default_plans_file,
        description="Retrieval plans (validated at start-up); see serving/plans/plans.yaml.",
    )
    api_keys_file: Path | None = Field(
        default=None, description="YAML mapping API keys to tenant/user/groups; unset = public documents only."
    )
    upstream_raw_base: str = Field(
        default="https://raw.githubusercontent.com", description="Where /v1/docs/{id}/upstream reads repository files."
    )
    upstream_max_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Size cap of one upstream refetch (413 above)."
    )
    upstream_timeout: float = Field(default=5.0, gt=0, le=60, description="Time cap of one upstream refetch.")
    max_live_refetch: int = Field(
        default=5, ge=1, le=100, description="Most doc_ids of one live batch refetch (each may take the timeout)."
    )
    reader_database_url: str | None = Field(
        default=None,
        description="URL the API logs in with; unset: the secrag database as secrag_reader (no password: "
        "right for the embedded server; with DATABASE_URL, see sql/roles.sql).",
    )
    querylog_database_url: str | None = Field(
        default=None, description="URL the opt-in query log writes with; unset: the secrag database as secrag_querylog."
    )
    allow_privileged_reader: bool = Field(
        default=False,
        description="Serve even when the API's login could write or escalate (superuser, table owner); dev only.",
    )
    require_api_key: bool = Field(
        default=False, description="Refuse anonymous callers (401) on every /v1 operation and MCP tool."
    )
    rate_per_minute: int = Field(default=600, ge=0, description="Requests a minute per API key; 0 = no limit.")
    anonymous_rate_per_minute: int = Field(
        default=120, ge=0, description="Requests a minute per anonymous client address; 0 = no limit."
    )
    failed_keys_per_minute: int = Field(
        default=10, ge=0, description="Unknown API keys a minute per client address (bursts of half); 0 = no limit."
    )
    heavy_concurrency: int = Field(default=4, ge=0, description="Concurrent /v1 operations per API key.")
    anonymous_heavy_concurrency: int = Field(
        default=2, ge=0, description="Concurrent /v1 operations of all anonymous callers together."
    )
    pool_min_size: int = Field(default=1, ge=0, le=64)
    pool_max_size: int = Field(default=8, ge=1, le=64)
    pool_timeout: float = Field(
        default=1.5, gt=0, le=30, description="Seconds a request waits for a connection before 503."
    )
    pool_reconnect_timeout: float = Field(
        default=4.0,
        gt=0,
        le=60,
        description="Longest reconnect backoff run before the next request starts a fresh one: caps "
        "how long the API lags behind a database that came back.",
    )
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024, description="Larger request bodies get 413.")
    # Lower bounds at the request defaults (k 10, candidates_k 100): a request that sets nothing stays valid.
    max_k: int = Field(default=50, ge=10, le=HARD_MAX_K, description="Largest `k` (results per page) of a search.")
    max_candidates: int = Field(
        default=1000,
        ge=100,
        le=HARD_MAX_CANDIDATES,
        description="Largest fts_k, vec_k, candidates_k and rerank_k of a search (HNSW's ef_search stops at 1000).",
    )
    max_query_chars: int = Field(
        default=8192, ge=64, le=HARD_MAX_QUERY_CHARS, description="Longest query of a search or plan, in characters."
    )
    max_response_bytes: int = Field(
        default=5 * 1024 * 1024, ge=4096, description="Results past this size are dropped and truncated=true."
    )
    query_log: bool = Field(default=False, description="Write one query_log row per search.")
    query_log_text: bool = Field(default=False, description="Also store the query text in query_log.")
    hnsw_max_scan_tuples: int = Field(default=50000, ge=1000)
    hnsw_iterative_scan: str = Field(default="relaxed_order", pattern="^(relaxed_order|strict_order|off)$")
    serving_model: str | None = Field(
        default=None,
        description="The embedding model searches use (on the allowlist, its vectors complete); unset: the "
        "model the pipeline last activated, followed within a minute when the pipeline switches.",
    )
    query_encoder: str = Field(
        default="onnx",
        pattern="^(onnx|torch)$",
        description="Query encoder: onnx (onnxruntime) or torch (sentence-transformers).",
    )
    query_encoder_threads: int = Field(
        default=1, ge=1, le=64, description="onnxruntime threads per query batch (torch uses torch_threads)."
    )
    query_cache_size: int = Field(default=1024, ge=0, description="Query vectors cached in process; 0 = no cache.")
    result_cache_size: int = Field(
        default=1024, ge=0, description="Search responses cached in process until the store changes; 0 = no cache."
    )
    metrics_enabled: bool = Field(default=True, description="Serve Prometheus metrics at GET /metrics.")
    warm_up: bool = Field(
        default=True,
        description="Run a few searches at start-up, before the first request (serving/api/warm_up.py).",
    )
    mcp_enabled: bool = Field(default=True, description="Serve the MCP tools at /mcp.")
    mcp_allowed_hosts: list[str] = Field(
        default_factory=lambda: ["127.0.0.1:*", "localhost:*", "[::1]:*", "testserver"],
        description="Host headers the MCP endpoint accepts (DNS-rebinding protection).",
    )


@lru_cache(maxsize=1)
def get_serving_settings() -> ServingSettings:
    """The process-wide serving settings (cached; read on first use)."""
    return ServingSettings()
