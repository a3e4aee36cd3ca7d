"""Request and response models of POST /v1/map: a text's ATT&CK techniques, each with its supporting sentences
and the passages behind it, and the Navigator layer of the whole text."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, Field, field_validator

from serving.contract.layer_models import LayerIn, LayerReport
from serving.contract.navigator_layer import NavigatorLayer
from serving.contract.plan_models import Citation
from serving.contract.requests import NUMBER, QUERY_PATTERN, AttackDomain, SBool, SInt, Strict, not_blank

# Hard caps of the request model; each deployment's own (SECRAG_MAP_MAX_CHARS, SECRAG_MAP_MAX_TECHNIQUES, at
# most these) are what the OpenAPI document states and what a request is checked against.
HARD_MAX_MAP_CHARS = 262_144
HARD_MAX_MAP_TECHNIQUES = 500
DEFAULT_LIMIT = 20
OFFSETS = "Character offsets into `text` as sent: Python str indices, i.e. Unicode code points (not bytes, not UTF-16)."


class MapRequest(Strict):
    text: str = Field(
        min_length=1,
        max_length=HARD_MAX_MAP_CHARS,
        description="A sentence, a paragraph or a whole report. It is split into sentences (line breaks, bullets "
        "and headings are read as boundaries too; fragments under three words are skipped), and each sentence is "
        "searched among the ATT&CK techniques. Not blank; at most this deployment's map_max_chars characters "
        "(maxLength) and map_max_sentences sentences.",
        json_schema_extra={"pattern": QUERY_PATTERN},
    )
    min_score: Annotated[float, Field(ge=0, le=1), NUMBER] | None = Field(
        default=None,
        description="Techniques scoring under this are left out (default: the search config's `map.min_score`, "
        "chosen on labelled reports: serving/search/search.yaml).",
    )
    limit: SInt = Field(
        default=DEFAULT_LIMIT,
        ge=1,
        le=HARD_MAX_MAP_TECHNIQUES,
        description="Most techniques returned, best first (at most this deployment's map_max_techniques).",
    )
    layer: SBool = Field(default=True, description="Also return the ATT&CK Navigator layer of the techniques.")
    domain: AttackDomain = Field(
        default="enterprise",
        description="The ATT&CK domain whose techniques the text is mapped to (enterprise, mobile or ics): its "
        "technique documents are the candidates and its procedure examples vote.",
    )
    technique_layer: LayerIn | None = Field(
        default=None,
        description="An ATT&CK Navigator layer (format 4.5 or 4.4): only its enabled techniques that the store's "
        "ATT&CK has are candidates (the others are listed in the response's `technique_layer`); at most this "
        "deployment's layer_max_techniques entries.",
    )

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        return not_blank(value, "text")


class SupportingSentence(BaseModel):
    start: int = Field(description=f"Where the sentence starts. {OFFSETS}")
    end: int = Field(description="One past its last character: text[start:end] is the sentence.")
    text: str
    rank: int = Field(description="The technique's rank among the ATT&CK techniques found for this sentence.")
    search_score: float = Field(description="The technique's hybrid search score for this sentence (see /v1/search).")
    vote: float = Field(
        description="What the sentence adds to the technique's score: the probability that it describes the "
        "technique, by the verifier or selector of the sentence model's path, or by the search path's share of "
        "labelled sentences whose technique at this rank was right (1 when the sentence names the technique's id)."
    )


class MappedTechnique(BaseModel):
    technique_id: str = Field(description="T#### or T####.###.")
    name: str = Field(description="The technique's full name (Parent: Sub for a sub-technique).")
    domain: AttackDomain | None = Field(default=None, description="Its ATT&CK domain (the map's).")
    score: float = Field(
        description="How likely the text describes the technique, in [0, 1]: the report-level decision's "
        "probability over its supporting sentences' votes when search.yaml sets `map.decision`, else "
        "1 - prod(1 - vote) (noisy-or: each sentence is independent evidence)."
    )
    tactics: list[str] = Field(description="Its ATT&CK tactics (short names, e.g. credential-access).")
    sentences: list[SupportingSentence] = Field(description="The sentences it was found for, in text order.")
    citations: list[Citation] = Field(
        description="The corpus passages behind it, cited as plans cite: its ATT&CK document and the passages "
        "the sentences matched (numbered across the response)."
    )


UnansweredReason = Literal["timeout", "statement_timeout", "database_unavailable", "database_error", "internal"]
UNANSWERED_REASONS: frozenset[str] = frozenset(get_args(UnansweredReason))


class UnansweredSentence(BaseModel):
    start: int = Field(description=f"Where the sentence starts. {OFFSETS}")
    end: int = Field(description="One past its last character: text[start:end] is the sentence.")
    reason: UnansweredReason = Field(
        description="`timeout`: the map's deadline (SECRAG_MAP_TIMEOUT_SECONDS) came before its search ran or "
        "finished; the others: the search failed that way (a kind of /v1/search's errors)."
    )


class MapResponse(BaseModel):
    techniques: list[MappedTechnique] = Field(description="Best first (score, then id).")
    sentences: int = Field(description="Sentences mapped (distinct ones searched once).")
    set_aside: int = Field(
        default=0, description="Sentences the behaviour gate found no behaviour in: they support no technique."
    )
    min_score: float = Field(description="The min_score applied.")
    omitted: int = Field(description="Techniques at or over min_score left out by `limit`.")
    model: str = Field(description="The embedding model of the searches (see /v1/stats).")
    layer: NavigatorLayer | None = Field(
        default=None, description="The ATT&CK Navigator layer (format 4.5) of the techniques; null when not asked."
    )
    technique_layer: LayerReport | None = Field(
        default=None,
        description="What was read of the `technique_layer` asked, if one was: its techniques and those left out.",
    )
    unanswered: list[UnansweredSentence] = Field(
        default_factory=list,
        description="Sentences whose search did not answer, in text order: the techniques above are what the "
        "other sentences found. Empty when every sentence was searched (then the same text and store give the "
        "same answer).",
    )
    took_ms: float
