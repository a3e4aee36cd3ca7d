"""Request and response models of the retrieval-plan endpoints."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from serving.contract.query_classes import QueryType
from serving.contract.requests import NUMBER, SBool, SearchFilters, Strict, check_query, query_field
from serving.contract.responses import Location

NoiseFilter = Literal["off", "on", "aggressive"]  # what each level trims: serving/plans/noise.py


class PlanRequest(Strict):
    query: str = query_field("The question or identifier.")
    plan: QueryType | None = Field(default=None, description="Force a plan (default: the query's type).")
    filters: SearchFilters = Field(default_factory=SearchFilters)
    total_chunks: Annotated[int, Field(ge=1, le=100), NUMBER] | None = Field(
        default=None, description="Override the plan's total."
    )
    noise_filter: NoiseFilter = Field(
        default="off",
        description="Trim passages: `on` drops licence lines and code comments, `aggressive` also comment "
        "lines, bare URLs, markup and trailing reference lists (citations keep the stored spans).",
    )
    grounded_only: SBool | None = Field(
        default=None,
        description="Ask the model to answer only from the context (default: when a cited collection asks).",
    )

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return check_query(value)


class SelectedChunk(BaseModel):
    citation: int = Field(description="The [n] this chunk is cited as in `context`.")
    chunk_id: str
    doc_id: str
    source: str
    category: str
    title: str
    url: str | None
    source_version: str | None
    score: float = Field(description="Hybrid score in (0, 1] (see /v1/search).")
    adjusted_score: float = Field(description="score x category boost x source boost, used for selection.")
    text: str = Field(description="The passage as the context holds it (after the noise filter).")
    location: Location = Field(description="Where the passage sits in its document.")


class Passage(Location):
    """One passage of a cited document, where it sits in the document."""

    chunk_id: str


class Citation(BaseModel):
    number: int
    doc_id: str
    title: str
    url: str | None
    source: str
    source_version: str | None
    media_type: str | None = Field(default=None, description="The document's media type.")
    passages: list[Passage] = Field(default_factory=list, description="Its passages in the context, in order.")


class PlanMetrics(BaseModel):
    coverage: float = Field(description="Share of the query's terms found in the selected text, 0..1.")
    balance: float = Field(description="1 - half the L1 distance between category shares and quotas, 0..1.")
    mean_score: float = Field(description="Mean hybrid score of the selected chunks.")
    confidence: float = Field(description="Mean of coverage, balance and mean_score, 0..1.")
    completeness: float = Field(
        description="Share of the plan's required parts (categories with at least 15 % of the quotas) that "
        "have a selected chunk, 0..1."
    )
    quality: float = Field(
        description="Context quality, 0..1: 0.3 coverage + 0.2 balance + 0.2 mean score (relative) + "
        "0.3 completeness. A plan missing a required part scores lower."
    )
    correlation: float = Field(
        description="Share of the pairs of selected chunks of different categories that share an ATT&CK "
        "technique (parents compared), 0..1: detections of the techniques described score high; 0 when "
        "fewer than two categories carry labels."
    )


class PlanResponse(BaseModel):
    query_type: str
    signals: list[str]
    plan_name: str
    plan: dict[str, Any]
    quotas: dict[str, int]
    selected: list[SelectedChunk]
    context: str
    citations: list[Citation]
    system_prompts: list[str] = Field(
        default_factory=list,
        description="The cited collections' system prompts (plans file `collections`), in order of first citation.",
    )
    grounded_only: bool = Field(
        default=False, description="The prompt tells the model to answer only from the context."
    )
    prompt: str = Field(
        default="",
        description="What to give the model, in this order: the system prompts, the grounded-only instruction "
        "(when asked), then `context`: the passages by category with their [n] and the numbered sources list.",
    )
    metrics: PlanMetrics
    candidates: int
    took_ms: float


class Decision(BaseModel):
    chunk_id: str
    doc_id: str
    category: str
    score: float
    adjusted_score: float
    taken: bool
    reason: str


class ExplainResponse(BaseModel):
    query_type: str
    signals: list[str]
    plan_name: str
    quotas: dict[str, int]
    corrections: dict[str, str] = Field(
        default_factory=dict, description="Misspelt query words and what the full-text leg searched instead."
    )
    decisions: list[Decision]


class PlansResponse(BaseModel):
    categories: list[str] = Field(description="The categories plans mix; each source's is in /v1/sources.")
    plans: dict[str, dict[str, Any]]
