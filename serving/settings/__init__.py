"""Serving settings: the shared secrag settings plus the API's own groups (env prefix SECRAG_)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings

from secrag.files.package_data import package_path
from secrag.settings import SETTINGS_CONFIG, Settings, doc_default
from serving.contract.layer_models import HARD_MAX_LAYER_TECHNIQUES
from serving.contract.map_models import DEFAULT_LIMIT, HARD_MAX_MAP_CHARS, HARD_MAX_MAP_TECHNIQUES
from serving.contract.mcp_budget import DEFAULT_MCP_CHARS, MAX_CHARS, MIN_CHARS
from serving.contract.requests import HARD_MAX_CANDIDATES, HARD_MAX_K, HARD_MAX_QUERY_CHARS


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


class LimitSettings(BaseSettings):
    """How much each caller and each request may take: rates, slots, the pool, request and response sizes."""

    model_config = SETTINGS_CONFIG

    rate_per_minute: int = Field(
        default=600,
        ge=0,
        description="Requests a minute per API key, counted in a moving window of a tenth of a minute (so bursts "
        "of a tenth of that); 0 = no limit. Over it: 429 with Retry-After (when the window's oldest request "
        "leaves it).",
    )
    anonymous_rate_per_minute: int = Field(
        default=120, ge=0, description="Requests a minute per anonymous client address, counted the same way."
    )
    failed_keys_per_minute: int = Field(
        default=10,
        ge=0,
        description="Unknown API keys a minute per client address (a moving window of half a minute, so bursts "
        "of half that); past it the address's unknown keys get 429 instead of 401. A valid key is looked up "
        "first and admitted whatever its address's failures. Each failure is logged with the address, never the "
        "key. 0 = no limit.",
    )
    heavy_concurrency: int = Field(
        default=4, ge=0, description="Concurrent /v1 operations and MCP requests per API key (429 past it)."
    )
    anonymous_heavy_concurrency: int = Field(
        default=2, ge=0, description="Concurrent /v1 operations of all anonymous callers together."
    )
    pool_min_size: int = Field(default=1, ge=0, le=64, description="Reader connections kept open.")
    pool_max_size: int = Field(default=8, ge=1, le=64, description="Most reader connections.")
    pool_timeout: float = Field(
        default=1.5, gt=0, le=30, description="Seconds a request waits for a connection before 503 (Retry-After)."
    )
    pool_reconnect_timeout: float = Field(
        default=4.0,
        gt=0,
        le=60,
        description="Longest reconnect backoff run before the next request starts a fresh one: caps how long the "
        "API lags behind a database that came back.",
    )
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024, description="Larger request bodies get 413.")
    # Lower bounds at the request defaults (k 10, candidates_k 100): a request that sets nothing stays valid.
    max_k: int = Field(
        default=50, ge=10, le=HARD_MAX_K, description="Largest `k` (results per page) of a search; more is a 422."
    )
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
        default=5 * 1024 * 1024,
        ge=4096,
        description="Search and document results past this size (or SECRAG_MAX_ANSWER_BYTES, when smaller) are "
        "dropped and `truncated` is true.",
    )
    max_answer_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=64 * 1024,
        description="The largest answer of any operation, REST or MCP, in bytes of JSON: an operation whose answer "
        "would be larger refuses with a 413 (`answer_too_large`) that names this bound and how to narrow the "
        "request, decided before the answer is built where its size follows from the request (a layer "
        "comparison), and checked again when the answer is serialised. Search and document results are trimmed "
        "to fit it instead (`truncated`, SECRAG_MAX_RESPONSE_BYTES).",
    )
    map_max_chars: int = Field(
        default=131072,
        ge=1024,
        le=HARD_MAX_MAP_CHARS,
        description="Longest text of a map (POST /v1/map), in characters (a long report: the dev set's longest "
        "is 73,000 characters in 560 sentences; SECRAG_MAP_MAX_SENTENCES bounds the work); more is a 422. "
        "Its body must also fit SECRAG_MAX_BODY_BYTES.",
    )
    map_max_sentences: int = Field(
        default=600,
        ge=10,
        le=10000,
        description="Most sentences of a map's text (each is one search); more is a 422 asking for a shorter text.",
    )
    map_max_techniques: int = Field(
        default=100,
        ge=DEFAULT_LIMIT,
        le=HARD_MAX_MAP_TECHNIQUES,
        description="Largest `limit` (techniques returned) of a map; more is a 422.",
    )
    layer_max_techniques: int = Field(
        default=2000,
        ge=100,
        le=HARD_MAX_LAYER_TECHNIQUES,
        description="Most technique entries of an ATT&CK Navigator layer a request sends (coverage, map, layer "
        "comparison; ATT&CK v18's whole Enterprise matrix, an entry per technique and tactic, has 887); more is a "
        "422.",
    )

    @property
    def results_bytes(self) -> int:
        """The size search and document results are trimmed to: the smaller of the two bounds."""
        return min(self.max_response_bytes, self.max_answer_bytes)


class SearchSettings(BaseSettings):
    """How searches run: the serving model and its encoder, the caches, HNSW's scan."""

    model_config = SETTINGS_CONFIG

    serving_model: str | None = Field(
        default=None,
        description="The embedding model searches use (in the model registry, its vectors complete); unset: the model "
        "the pipeline last activated, followed within 30 s when the pipeline switches (the catalog's refresh, "
        "`serving/search/catalog.py` SOURCES_TTL).",
    )
    sentence_model: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        description="The model of the sentence path (hybrid queries of one sentence, and /v1/map): the encoder "
        "trained on ATT&CK's procedure examples, whose vectors of the ATT&CK sources the procedures voter leg "
        "and a vector leg filtered to them read. Unset: the trained model last promoted (`secrag models "
        "promote`), followed within 30 s; `none`: off, the serving model everywhere.",
    )
    query_encoder: str = Field(
        default="onnx",
        pattern="^(onnx|torch)$",
        description="How the API encodes queries: the serving model's ONNX file on onnxruntime, or `torch` "
        "(sentence-transformers, fp32 only).",
    )
    query_encoder_threads: int = Field(
        default=1,
        ge=1,
        le=64,
        description="onnxruntime threads per query batch (1 is best with concurrent requests on 2 cores).",
    )
    query_cache_size: int = Field(
        default=1024, ge=0, description="Query vectors cached per API process; 0 = no cache (benchmarks)."
    )
    result_cache_size: int = Field(
        default=1024,
        ge=0,
        description="Search responses cached per API process, per caller and request, until the store changes "
        "(at most a second late); 0 = no cache (benchmarks).",
    )
    map_concurrency: int = Field(
        default=2,
        ge=1,
        le=16,
        description="Sentence searches one map runs at once, each on a reader connection of the pool (at most "
        "the connections maps may take); about the cores the database has. Each search past the first takes "
        "one of the caller's concurrent-request slots (SECRAG_HEAVY_CONCURRENCY) while it is free: a caller's "
        "maps together never run more searches at once than its slots.",
    )
    map_process_concurrency: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Map work all maps of the API process run at once (a batch of sentences encoded, or one "
        "sentence searched). 0: half the cores the process may use (one at least), and more, up to the pool "
        "less SECRAG_MAP_RESERVE_CONNECTIONS, while no other API request is in flight. Maps then leave the other "
        "cores to other requests: on 2 cores, other callers' searches kept their p50 within 2x of an idle API "
        "while four maximal maps ran (bench/map_load.py). Set: exactly that many, whatever else runs.",
    )
    map_reserve_connections: int = Field(
        default=2,
        ge=0,
        le=63,
        description="Reader connections maps never take: all maps of the process together search on at most "
        "SECRAG_POOL_MAX_SIZE less these (one at least), whatever SECRAG_MAP_PROCESS_CONCURRENCY says, so other "
        "callers' requests keep connections while maximal maps run.",
    )
    map_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="How long a map may run (its sentences' encoding and searches). The sentences not searched "
        "by then are reported in the answer's `unanswered`, with what the others found; its queued searches "
        "are dropped and its running statements cancelled before it answers. On 2 cores a 2,000-word report "
        "maps in about 5 s and a maximal one (600 sentences) in about 20 s when alone; maps at once share the "
        "process's map work (SECRAG_MAP_PROCESS_CONCURRENCY).",
    )
    search_parallel_legs: bool = Field(
        default=True,
        description="Run a hybrid search's voter legs (neighbours, procedures) on a second reader connection while "
        "its other legs run, whenever fewer searches and fewer API requests are in flight than the API process has "
        "cores: one client then waits for the slower statement, not for both.",
    )
    search_source_vectors_mb: int = Field(
        default=128,
        ge=0,
        description="Memory per API process for online sources' vectors (MB): a search filtered to such sources, "
        "and the procedures voter leg, take exact distances over them in the API (about 1 ms for 16,000 chunks) "
        "instead of in PostgreSQL; loaded in the background, used only at the source's current data version. "
        "0 = off. The `secrag_source_vectors` metric shows what is held.",
    )
    hnsw_max_scan_tuples: int = Field(
        default=50000, ge=1000, description="pgvector's hnsw.max_scan_tuples for filtered vector scans."
    )
    hnsw_iterative_scan: str = Field(
        default="relaxed_order",
        pattern="^(relaxed_order|strict_order|off)$",
        description="pgvector's hnsw.iterative_scan: keep scanning until a filter lets enough candidates through.",
    )


class ObservabilitySettings(BaseSettings):
    """What the API tells its operators: Prometheus metrics and the opt-in query log."""

    model_config = SETTINGS_CONFIG

    metrics_enabled: bool = Field(
        default=True,
        description="Serve Prometheus metrics at GET /metrics: open like the probes, with request, search, pool and "
        "replica figures only.",
    )
    metrics_key: SecretStr | None = Field(
        default=None,
        description="A key (at least 20 random characters) that GET /metrics then requires (Authorization: Bearer, "
        "or X-API-Key; 401 without), and with which it adds the private figures: the store's table and index "
        "sizes and vectors per model (every tenant's rows) and the query-vector and result caches' counters.",
    )
    query_log: bool = Field(default=False, description="Write one query_log row per search and plan.")
    query_log_text: bool = Field(default=False, description="Also keep the query text in query_log.")


class ServingSettings(Settings, ApiSettings, AccessSettings, LimitSettings, SearchSettings, ObservabilitySettings):
    """Everything `secrag serve` reads: the shared settings and the API's own groups, all from SECRAG_*
    environment variables."""

    model_config = SETTINGS_CONFIG


SERVING_GROUPS: tuple[type[BaseSettings], ...] = (
    ApiSettings,
    AccessSettings,
    LimitSettings,
    SearchSettings,
    ObservabilitySettings,
)


@lru_cache(maxsize=1)
def get_serving_settings() -> ServingSettings:
    """The process-wide serving settings (cached; read on first use)."""
    return ServingSettings()
