"""How much each caller and each request may take: rates, slots, the pool, request and response sizes."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

from secrag.settings import SETTINGS_CONFIG
from serving.contract.layer_models import HARD_MAX_LAYER_TECHNIQUES
from serving.contract.map_models import DEFAULT_LIMIT, HARD_MAX_MAP_CHARS, HARD_MAX_MAP_TECHNIQUES
from serving.contract.requests import HARD_MAX_CANDIDATES, HARD_MAX_K, HARD_MAX_QUERY_CHARS


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
