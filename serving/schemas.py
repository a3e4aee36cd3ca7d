"""Pydantic models of the HTTP edge, one per direction; descriptions feed the OpenAPI document."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic import Strict as PydanticStrict

from secrag.platforms import PLATFORMS, canonical, platform_names

MAX_QUERY_CHARS = 8192
MAX_IDS = 100
MAX_ID_CHARS = 1000
# Constraints the OpenAPI document states as patterns (JSON Schema patterns are unanchored unless
# written with ^...$; the validators below say the same in words).
NO_NUL = r"^[^\x00]*$"
QUERY_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"  # not blank, no NUL
TECHNIQUE_PATTERN = r"^[Tt]\d{4}(\.\d{3})?$"

SCORE_SCALES = (
    "Score scales by mode: "
    "fts = ts_rank_cd(tsv, query, 32), i.e. rank/(rank+1) in [0, 1); "
    "vector = cosine similarity 1 - cosine distance in [-1, 1] (about 0..1 for this model); "
    "fuzzy = rapidfuzz similarity of the query to the title or best identifier, in [0, 1]; "
    "hybrid/fuse = reciprocal-rank fusion sum(w_leg / (rrf_k0 + rank_leg)) divided by its maximum "
    "sum(w_leg) / (rrf_k0 + 1), in (0, 1]; hybrid/fts_then_vec = cosine similarity of the full-text "
    "candidates re-ranked by vector (vector-only fill-ins follow them). "
    "A document whose id is the exact identifier queried (e.g. T1003, CVE-2021-44228) is put first "
    "with score 1.0. The final score is multiplied by the source boost from the search config "
    "(default 1.0)."
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _iso_only(value: object) -> object:
    if not isinstance(value, str | datetime):
        raise ValueError("expected an ISO 8601 date-time string")
    return value


def _number_only(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("expected a JSON number")
    return value


# Request fields take exactly their JSON type: no "10" for 10, no true for 1, no 0 for a date
# (an integral number such as 10.0 is still an integer, as JSON Schema says).
NUMBER = BeforeValidator(_number_only)  # after any Field constraints in an Annotated (so they reach the schema)
SInt = Annotated[int, NUMBER]
SFloat = Annotated[float, NUMBER]
SBool = Annotated[bool, PydanticStrict()]
IsoDatetime = Annotated[datetime, BeforeValidator(_iso_only)]


def check_query(value: str) -> str:
    """A query that is not blank and has no NUL (QUERY_PATTERN in words; shared by search and plan)."""
    if "\x00" in value:
        raise ValueError("query must not contain NUL characters")
    if not re.search(r"\S", value):
        raise ValueError("query must not be blank")
    return value


def query_field(description: str) -> Any:  # noqa: ANN401 - a pydantic FieldInfo
    """The query of search and plan: 1..MAX_QUERY_CHARS characters, the pattern stated in the schema."""
    return Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description=f"{description} 1..{MAX_QUERY_CHARS} characters, not blank.",
        json_schema_extra={"pattern": QUERY_PATTERN},
    )


# List items whose shape the schema states: no NUL, bounded length, and the pattern where one exists.
Text = Annotated[str, Field(max_length=MAX_ID_CHARS, json_schema_extra={"pattern": NO_NUL})]
SourceName = Annotated[str, Field(max_length=64, json_schema_extra={"pattern": NO_NUL})]
TechniqueId = Annotated[str, Field(pattern=TECHNIQUE_PATTERN)]
PlatformName = Annotated[str, Field(max_length=64, json_schema_extra={"enum": list(platform_names())})]


class SearchFilters(Strict):
    """Restrict results; every filter is ANDed. Arrays match when any element matches (tags_all: all)."""

    sources: list[SourceName] | None = Field(
        default=None,
        max_length=64,
        description="Source names in any case (see /v1/sources; the enum lists the online sources of this "
        "deployment, and the user folders the caller may see are accepted too); an unknown name is a 422.",
    )
    doc_ids: list[Text] | None = Field(default=None, max_length=1000)
    techniques: list[TechniqueId] | None = Field(
        default=None,
        max_length=100,
        description="ATT&CK ids; a parent id (T1003) also matches its sub-techniques (T1003.001).",
    )
    platforms: list[PlatformName] | None = Field(
        default=None,
        max_length=50,
        description="Platforms or a common alias (Windows, macOS, Mac OS X, k8s, Azure AD), in any case.",
    )
    tags_any: list[Text] | None = Field(default=None, max_length=100)
    tags_all: list[Text] | None = Field(default=None, max_length=100)
    updated_after: IsoDatetime | None = None
    updated_before: IsoDatetime | None = None

    @field_validator("techniques")
    @classmethod
    def _technique_ids(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        return [t.upper() for t in value]

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, value: list[str] | None) -> list[str] | None:
        """Platform names as users type them (Windows, Mac OS, k8s) onto the stored vocabulary."""
        if value is None:
            return None
        unknown = [v for v in value if canonical(v) is None]
        if unknown:
            raise ValueError(
                f"unknown platforms: {', '.join(repr(u[:30]) for u in unknown[:5])}; known: {', '.join(PLATFORMS)}"
            )
        return sorted({c for c in map(canonical, value) if c})

    @model_validator(mode="after")
    def _no_nul(self) -> SearchFilters:
        for name in ("sources", "doc_ids", "platforms", "tags_any", "tags_all"):
            values = getattr(self, name) or ()
            if any("\x00" in v for v in values):
                raise ValueError(f"filters.{name} must not contain NUL characters")
        return self


class ReturnOptions(Strict):
    """What each result carries."""

    text: SBool = Field(default=False, description="The chunk text (cut at max_text_chars).")
    metadata: SBool = Field(default=False, description="The document's metadata object.")
    snippets: SBool = Field(default=True, description="A ts_headline snippet with <mark> highlights.")
    max_text_chars: SInt = Field(default=2000, ge=1, le=100_000)


class SearchRequest(Strict):
    """A search over chunks of the documents the caller may see."""

    query: str = query_field("What to search for.")
    k: SInt = Field(default=10, ge=1, le=50)
    offset: SInt = Field(default=0, ge=0, le=1000)
    mode: Literal["hybrid", "fts", "vector", "fuzzy"] = "hybrid"
    strategy: Literal["fuse", "fts_then_vec"] = Field(default="fuse", description="Hybrid strategy.")
    fts_k: Annotated[int, Field(ge=1, le=1000), NUMBER] | None = Field(
        default=None, description="Full-text candidates (hybrid)."
    )
    vec_k: Annotated[int, Field(ge=1, le=1000), NUMBER] | None = Field(
        default=None, description="Vector candidates (hybrid)."
    )
    rrf_k0: SInt = Field(default=60, ge=1, le=1000, description="Reciprocal-rank constant.")
    w_fts: SFloat = Field(default=1.0, ge=0, le=10)
    w_vec: SFloat = Field(default=1.0, ge=0, le=10)
    w_fuzzy: SFloat = Field(
        default=0.5, ge=0, le=10, description="Weight of the trigram leg (used for queries up to 64 characters)."
    )
    candidates_k: SInt = Field(
        default=100, ge=1, le=1000, description="fts_then_vec: full-text candidates re-ranked by vector."
    )
    rerank_k: SInt = Field(
        default=50,
        ge=1,
        le=1000,
        description="Fused results re-scored (boosts, fuzzy re-scoring, thresholds) before paging.",
    )
    filters: SearchFilters = Field(default_factory=SearchFilters)
    min_score: Annotated[float, Field(ge=-1, le=100), NUMBER] | None = Field(default=None)
    group_by_doc: SBool = Field(default=True, description="Best chunk per document.")
    return_: ReturnOptions = Field(default_factory=ReturnOptions, alias="return")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("query")
    @classmethod
    def _query_bytes(cls, value: str) -> str:
        return check_query(value)


class LegScore(BaseModel):
    score: float = Field(description="The leg's own score (scale as for the single-leg mode).")
    rank: int = Field(description="1-based rank within the leg.")


class LegScores(BaseModel):
    fts: LegScore | None = None
    vector: LegScore | None = None
    fuzzy: LegScore | None = None


class SearchResult(BaseModel):
    doc_id: str
    chunk_id: str
    source: str
    title: str
    url: str | None
    score: float = Field(description=SCORE_SCALES)
    exact: bool = Field(description="The document id is the identifier queried.")
    scores: LegScores
    techniques: list[str]
    platforms: list[str]
    snippet: str | None = None
    text: str | None = None
    metadata: dict[str, Any] | None = None


class SearchResponse(BaseModel):
    results: list[SearchResult]
    query_type: str = Field(
        description="technique, sub_technique, cve, capec, atlas, d3fend, uuid, identifier, keyword or natural."
    )
    enriched_query: str = Field(description="The query after ATT&CK enrichment (what the vector leg embeds).")
    model: str = Field(description="The embedding model of the vector leg (see /v1/stats).")
    took_ms: float
    truncated: bool = Field(description="Results were dropped to keep the response under its size cap.")


class IdsRequest(Strict):
    ids: list[Text] = Field(min_length=1, max_length=MAX_IDS)

    @field_validator("ids")
    @classmethod
    def _printable(cls, value: list[str]) -> list[str]:
        if any("\x00" in i for i in value):
            raise ValueError("ids must not contain NUL characters")
        return value


class Document(BaseModel):
    doc_id: str
    source: str
    source_version: str
    title: str
    url: str | None
    body: str
    metadata: dict[str, Any]
    techniques: list[str]
    platforms: list[str]
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    chunk_ids: list[str]


class DocumentsResponse(BaseModel):
    documents: list[Document]
    missing: list[str] = Field(description="Ids not found (or not visible to the caller).")
    truncated: bool


class UpstreamResponse(BaseModel):
    """The authoritative upstream record of a document."""

    doc_id: str
    source: str
    version: str = Field(description="The commit, release tag or feed version the document was published from.")
    path: str = Field(description="The file in the upstream repository or release (or the feed).")
    fetched_from: str = Field(description="The URL or mirror path read.")
    size: int = Field(description="Bytes read.")
    content: str = Field(description="The file as text (for a feed: the whole feed).")
    record: Any = Field(default=None, description="The record picked out of a feed, when the source is one.")


class Chunk(BaseModel):
    chunk_id: str
    doc_id: str
    source: str
    ordinal: int
    title: str
    text: str
    enriched_text: str
    identifiers: list[str]


class ChunksResponse(BaseModel):
    chunks: list[Chunk]
    missing: list[str]
    truncated: bool


class Attempt(BaseModel):
    """One refresh attempt of a source."""

    at: datetime
    status: Literal["running", "published", "refused", "failed", "abandoned"]
    phase: Literal["probe", "fetch", "parse", "publish"] | None
    version: str | None = Field(description="The upstream version tried (none when the probe failed).")
    reason: str | None


class SourceInfo(BaseModel):
    name: str
    kind: str
    description: str
    category: str
    upstream: str | None
    branch: str | None
    tracking: str | None
    version: str | None = Field(description="The published (served) version.")
    last_seen_version: str | None
    last_check: datetime | None
    last_sync: datetime | None
    records: int
    state: str
    last_error: str | None
    last_attempt: Attempt | None = Field(description="The last refresh attempt, whatever its outcome.")
    last_success: datetime | None = Field(description="When a version of this source was last published.")


class SourcesResponse(BaseModel):
    sources: list[SourceInfo]


class Percentiles(BaseModel):
    count: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None


class SourceStats(BaseModel):
    documents: int
    chunks: int
    chunks_embedded: int = Field(description="Chunks with a vector for the active model.")
    embeddings: dict[str, int] = Field(description="Distinct vectors per model id.")
    versions: dict[str, int] = Field(description="source_versions rows per status.")
    current_version: str | None
    last_sync: datetime | None
    sync_age_s: float | None


class ModelStats(BaseModel):
    model_id: str
    dimensions: int
    active: bool
    embeddings: int


class RequestStats(BaseModel):
    since: datetime
    total: Percentiles
    by_route: dict[str, Percentiles]
    by_status: dict[str, int]


class EncoderStats(BaseModel):
    backend: str = Field(description="onnx or torch.")
    hits: int = Field(description="Queries answered from the query-vector cache since start.")
    misses: int
    size: int
    max_size: int = Field(description="Cache capacity (SECRAG_QUERY_CACHE_SIZE; 0 = off).")
    runs: int = Field(description="Model runs; concurrent queries share a run (micro-batching).")
    encoded: int = Field(description="Texts encoded by the model.")
    encode_ms: float = Field(description="Milliseconds spent in the model.")


class ResultCacheStats(BaseModel):
    hits: int = Field(description="Searches answered from the result cache since start.")
    misses: int
    size: int
    max_size: int = Field(description="Capacity (SECRAG_RESULT_CACHE_SIZE; 0 = off).")


class StatsResponse(BaseModel):
    totals: dict[str, int]
    sources: dict[str, SourceStats]
    models: list[ModelStats]
    serving_model: str = Field(
        description="The model searches embed queries with: SECRAG_SERVING_MODEL, else the active model."
    )
    index_bytes: dict[str, int]
    table_bytes: dict[str, int]
    requests: RequestStats
    encoder: EncoderStats
    result_cache: ResultCacheStats


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    checks: dict[str, bool]
    schema_version: int | None
    expected_schema_version: int
    model: str | None


class ErrorResponse(BaseModel):
    detail: Any
