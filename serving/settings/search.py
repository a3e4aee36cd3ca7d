"""How searches run: the serving model and its encoder, the caches, HNSW's scan."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

from secrag.settings import SETTINGS_CONFIG


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
        "cores to other requests (docs/figures.md, maps shared between callers). Set: exactly that many, whatever "
        "else runs.",
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
        "are dropped and its running statements cancelled before it answers. Maps at once share the process's "
        "map work (SECRAG_MAP_PROCESS_CONCURRENCY); how long a report takes is in docs/figures.md.",
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
        "and the procedures voter leg, take exact distances over them in the API "
        "instead of in PostgreSQL; loaded in the background, used only at the source's current data version. "
        "0 = off. The `secrag_source_vectors` metric shows what is held.",
    )
    search_ann_index_mb: int = Field(
        default=0,
        ge=0,
        description="Memory per API process for an HNSW index of the public vectors (MB): a search that no filter "
        "narrows, from a caller without a tenant, walks it instead of PostgreSQL's HNSW index; built at start-up and "
        "in the background, used only at the sources' current data versions; a store whose index would not fit "
        "walks in PostgreSQL (memory per million chunks: docs/scaling.md). 0 = off.",
    )
    hnsw_max_scan_tuples: int = Field(
        default=50000, ge=1000, description="pgvector's hnsw.max_scan_tuples for filtered vector scans."
    )
    hnsw_iterative_scan: str = Field(
        default="relaxed_order",
        pattern="^(relaxed_order|strict_order|off)$",
        description="pgvector's hnsw.iterative_scan: keep scanning until a filter lets enough candidates through.",
    )
