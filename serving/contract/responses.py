"""Pydantic models of the HTTP edge's responses (requests: serving/contract/requests.py); descriptions feed the
OpenAPI document."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from secrag.error_kinds import KINDS
from serving.contract.requests import SCORE_SCALES


class LegScore(BaseModel):
    score: float = Field(description="The leg's own score (scale as for the single-leg mode).")
    rank: int = Field(description="1-based rank within the leg.")


class LegScores(BaseModel):
    fts: LegScore | None = None
    vector: LegScore | None = None
    fuzzy: LegScore | None = None
    label: LegScore | None = Field(
        default=None,
        description="The document is labelled with a technique the query names; cosine similarity and rank "
        "among those documents' chunks.",
    )
    neighbours: LegScore | None = Field(
        default=None,
        description="The document is labelled with techniques of the query's nearest documents (any source); "
        "the mean vote of its labels (each near document votes its cosine similarity, split over its labels) "
        "and rank.",
    )
    procedures: LegScore | None = Field(
        default=None,
        description="The document is labelled with techniques of the query's nearest ATT&CK procedure examples "
        '("APT29 has used ..."); the mean vote of its labels, as for `neighbours`, and rank.',
    )


class Location(BaseModel):
    """Where a chunk sits in its document, for citations."""

    char_start: int | None = Field(
        default=None, description="First character of the chunk in the document's `body` (None: published before 0015)."
    )
    char_end: int | None = Field(default=None, description="One past its last character in `body`.")
    heading: str | None = Field(default=None, description="The Markdown heading of `body` it falls under.")
    pages: list[int] | None = Field(default=None, description="For a PDF, the 1-based pages it spans.")
    media_type: str | None = Field(
        default=None, description="The document's media type: its upstream form's, or its file's in a user folder."
    )


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
    domains: list[str] = Field(
        default_factory=list,
        description="Its ATT&CK domains (enterprise, mobile, ics): an ATT&CK document's own, else those of its "
        "techniques; empty for a document with no technique.",
    )
    platforms: list[str]
    snippet: str | None = None
    text: str | None = None
    metadata: dict[str, Any] | None = None
    location: Location = Field(default_factory=Location)


class SearchResponse(BaseModel):
    results: list[SearchResult]
    query_type: str = Field(
        description="technique, sub_technique, cve, capec, atlas, d3fend, uuid, identifier, keyword or natural."
    )
    enriched_query: str = Field(description="The query after ATT&CK enrichment (what the vector leg embeds).")
    model: str = Field(description="The embedding model of the vector leg (see /v1/stats).")
    corrections: dict[str, str] = Field(
        default_factory=dict,
        description="Query words no visible chunk contains, and the title words the full-text leg searched "
        "instead (the vector leg embeds the query as written).",
    )
    took_ms: float
    truncated: bool = Field(description="Results were dropped to keep the response under its size cap.")
    vector_threshold: float | None = Field(
        default=None,
        description="The cosine similarity under which the vector leg's candidates were dropped: the serving "
        "model's threshold for this query class (search.yaml vector_thresholds); null when none applies.",
    )
    below_vector_threshold: int = Field(
        default=0, ge=0, description="How many vector-leg candidates were under vector_threshold and dropped."
    )


class Document(BaseModel):
    doc_id: str = Field(description="`<source>:<the record's id>`, e.g. mitre_attack:T1003, sigma:<rule id>.")
    source: str = Field(description="The source or folder it was published from (GET /v1/sources).")
    source_version: str = Field(description="The upstream version it was published from (commit, tag, feed version).")
    title: str
    url: str | None = Field(description="Its upstream page or file, when it has one.")
    body: str = Field(description="Its whole text, of which its chunks are parts.")
    metadata: dict[str, Any] = Field(
        description="The record's own fields. An ATT&CK technique's list its detection strategies and analytics "
        "(`detection_strategies`, `analytics`); a detection strategy's (mitre_attack_detections:DET0103) lists "
        "its `analytics`, each with its id, platforms and log sources and a document of its own "
        "(mitre_attack_detections:AN0286); every ATT&CK document says its `domain`."
    )
    techniques: list[str] = Field(description="The ATT&CK techniques it is labelled with, set at publish.")
    platforms: list[str] = Field(description="The platforms it applies to, as the search filters name them.")
    tags: list[str] = Field(description="The record's tags, as `filters.tags_any` and `tags_all` match them.")
    created_at: datetime = Field(description="When it was first published.")
    updated_at: datetime = Field(description="When a publish last wrote it.")
    media_type: str | None = Field(
        default=None, description="Its upstream form's media type, or its file's in a user folder."
    )
    chunk_ids: list[str]


class DocumentsResponse(BaseModel):
    documents: list[Document]
    missing: list[str] = Field(description="Ids not found (or not visible to the caller).")
    truncated: bool


class UpstreamResponse(BaseModel):
    """The authoritative upstream form of one record, at the version its document was published from."""

    doc_id: str
    source: str
    version: str = Field(description="The commit, release tag or feed version the document was published from.")
    path: str = Field(description="The file in the upstream repository or release (or the feed) holding it.")
    origin: Literal["store", "live"] = Field(
        description="store: the form kept when the document was published (no upstream access); live: read "
        "from the upstream (or its mirror) now, at the published version."
    )
    fetched_from: str = Field(description="`store`, or the URL or mirror path read.")
    media_type: str = Field(description="The form's media type: application/json, application/yaml, ...")
    size: int = Field(description="Bytes of the record's upstream form (UTF-8).")
    content: str = Field(
        description="The record's upstream form as text: one Sigma file, one STIX object, one feed entry, one "
        "YAML document; empty when `columns` was given."
    )
    record: Any = Field(
        default=None,
        description="The record as data when its form is structured (JSON, YAML, TOML); with `columns`, only "
        "those top-level keys.",
    )
    missing_columns: list[str] = Field(default_factory=list, description="Requested columns the record lacks.")


class UpstreamError(BaseModel):
    doc_id: str
    status: int = Field(
        description="The HTTP status this document alone would have had (413, 501, 502, 504), or 429 for an id "
        "beyond a live batch's SECRAG_MAX_LIVE_REFETCH."
    )
    kind: str = Field(description="The error's stable kind, as in an error response.")
    error: str


class UpstreamBatchResponse(BaseModel):
    """The upstream forms of several documents; each fails or succeeds on its own."""

    records: list[UpstreamResponse]
    missing: list[str] = Field(description="Ids that are unknown or not visible to the caller.")
    errors: list[UpstreamError] = Field(description="Documents whose upstream form could not be given, and why.")
    truncated: bool = Field(description="Records were dropped to keep the response under its size cap.")


class Chunk(BaseModel):
    chunk_id: str = Field(description="`<doc_id>#<ordinal>`.")
    doc_id: str
    source: str
    ordinal: int = Field(description="Its place in its document, from 0.")
    title: str
    text: str = Field(description="Its part of the document's text.")
    enriched_text: str = Field(
        description="The text as indexed and embedded: the ATT&CK names of the technique ids it mentions added."
    )
    identifiers: list[str] = Field(
        description="The identifier forms of its text and of its record's id, title and techniques (lower case), "
        "which full-text search weighs as a title."
    )
    location: Location = Field(default_factory=Location)


class ChunksResponse(BaseModel):
    chunks: list[Chunk]
    missing: list[str]
    truncated: bool


ErrorKindField = Field(
    description="Why the attempt failed, as a stable word of a fixed vocabulary "
    f"({', '.join(KINDS)}); none when it did not fail.",
)


class Attempt(BaseModel):
    """The source's last finished refresh attempt: the one its state comes from."""

    at: datetime
    status: Literal["published", "unchanged", "refused", "failed", "abandoned"]
    phase: Literal["probe", "fetch", "parse", "publish"] | None
    version: str | None = Field(description="The upstream version tried (none when the probe failed).")
    error_kind: str | None = ErrorKindField
    reason: str | None = Field(description="The fixed message of the error kind (never the error's own text).")


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
    state: Literal["new", "ok", "failed", "refused", "abandoned"] = Field(
        description="The outcome of the last finished refresh attempt (`ok`: published or unchanged)."
    )
    error_kind: str | None = ErrorKindField
    last_error: str | None = Field(description="The fixed message of the error kind (never the error's own text).")
    last_attempt: Attempt | None = Field(description="The last finished refresh attempt, whatever its outcome.")
    running_since: datetime | None = Field(description="When a refresh now under way started.")
    last_success: datetime | None = Field(description="When a version of this source was last published.")
    poll_interval: int | None = Field(
        default=None, description="Seconds between two probes of the upstream (none for user folders)."
    )
    fresh: bool | None = Field(
        default=None,
        description="Whether the upstream answered a probe within the freshness window (two poll intervals "
        "plus 10 minutes) and no newer version has waited longer than it to be published: the verdict of the "
        "source's Dagster freshness check. None for sources that are not polled.",
    )
    stale_reason: str | None = Field(default=None, description="Why the source is not fresh.")


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
    embeddings: int = Field(description="The model's vectors of the sources listed (the caller's), summed per source.")


class RequestStats(BaseModel):
    since: datetime
    total: Percentiles
    by_route: dict[str, Percentiles]
    by_status: dict[str, int]


class StatsResponse(BaseModel):
    """Figures of what the caller may see; store-wide sizes and cache counters are on /metrics (with its key)."""

    totals: dict[str, int]
    sources: dict[str, SourceStats]
    models: list[ModelStats]
    serving_model: str = Field(
        description="The model searches embed queries with: SECRAG_SERVING_MODEL, else the active model."
    )
    requests: RequestStats


class Health(BaseModel):
    status: str


class ReplicaStatus(BaseModel):
    standby: bool = Field(description="The reader's database is a hot standby (pg_is_in_recovery()).")
    lag_seconds: float | None = Field(
        description="How far its replay is behind the primary: 0 on a primary and on a standby that has replayed "
        "all it received; null while unknown (no transaction replayed yet)."
    )
    max_lag_seconds: float | None = Field(description="SECRAG_REPLICA_MAX_LAG_SECONDS (null: 0, no limit).")


class Readiness(BaseModel):
    status: str
    checks: dict[str, bool] = Field(
        description="database, schema and model; `replica_lag` too unless SECRAG_REPLICA_MAX_LAG_SECONDS is 0."
    )
    schema_version: int | None
    expected_schema_version: int
    model: str | None
    replica: ReplicaStatus | None = Field(
        default=None, description="Where the API reads and its lag (null when the database did not answer)."
    )
