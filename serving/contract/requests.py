"""Pydantic models of the HTTP edge's requests and their field types and constraints (upstream forms:
upstream_requests.py; the error body: error_responses.py; responses: responses.py); descriptions and constraints
feed the OpenAPI document."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    field_validator,
    model_validator,
)
from pydantic import Strict as PydanticStrict

from secrag.platforms import PLATFORMS, canonical, platform_names

# Hard caps of the request models; each deployment's own limits (serving/access/request_limits.py, at most
# these) are what the OpenAPI document states and what a request is checked against.
HARD_MAX_QUERY_CHARS = 65536
HARD_MAX_K = 1000
HARD_MAX_CANDIDATES = 10000
MAX_IDS = 100
MAX_COLUMNS = 50  # top-level keys one upstream refetch may select
MAX_ID_CHARS = 1000
# Constraints the OpenAPI document states as patterns (JSON Schema patterns are unanchored unless
# written with ^...$; the validators below say the same in words).
NO_NUL = r"^[^\x00]*$"
# Blank: the characters Python's `\s` matches, written out. JSON Schema's `\s` (ECMA-262) leaves out \x1c-\x1f and
# \x85 and adds \ufeff, pydantic's (Rust) differs again: a text the schema accepts must not be refused as blank.
BLANK = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
QUERY_PATTERN = rf"^[^\x00]*[^{BLANK}\x00][^\x00]*$"  # not blank, no NUL
TECHNIQUE_PATTERN = r"^[Tt]\d{4}(\.\d{3})?$"

SCORE_SCALES = (
    "Score scales by mode: "
    "fts = ts_rank_cd(tsv, query, 32), i.e. rank/(rank+1) in [0, 1); "
    "vector = cosine similarity 1 - cosine distance in [-1, 1] (about 0..1 for this model); "
    "hybrid/fuse = reciprocal-rank fusion sum(w_leg / (rrf_k0 + rank_leg)) divided by its maximum "
    "sum(w_leg) / (rrf_k0 + 1), in (0, 1]; "
    "fuzzy = the same fusion of two lexical legs: trigram similarity of titles (w_fuzzy) and full text "
    "over the spelling-corrected query (w_fts) (scores.fuzzy keeps the rapidfuzz similarity of the query to the "
    "title or best identifier, in [0, 1]); hybrid/fts_then_vec = cosine similarity of the full-text "
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


_NOT_BLANK = re.compile(rf"[^{BLANK}]")


def not_blank(value: str, name: str) -> str:
    """A text with no NUL and a character that is not blank: QUERY_PATTERN in words (`name` in the message)."""
    if "\x00" in value:
        raise ValueError(f"{name} must not contain NUL characters")
    if not _NOT_BLANK.search(value):
        raise ValueError(f"{name} must not be blank")
    return value


def check_query(value: str) -> str:
    """A query that is not blank and has no NUL (QUERY_PATTERN in words; shared by search and plan)."""
    return not_blank(value, "query")


def query_field(description: str) -> Any:  # noqa: ANN401 - a pydantic FieldInfo
    """The query of search and plan: not blank, at most the deployment's max_query_chars (stated in the
    document as maxLength; HARD_MAX_QUERY_CHARS here), the pattern stated in the schema."""
    return Field(
        min_length=1,
        max_length=HARD_MAX_QUERY_CHARS,
        description=f"{description} Not blank; at most this deployment's max_query_chars characters (maxLength).",
        json_schema_extra={"pattern": QUERY_PATTERN},
    )


# List items whose shape the schema states: no NUL, bounded length, and the pattern where one exists.
Text = Annotated[str, Field(max_length=MAX_ID_CHARS, json_schema_extra={"pattern": NO_NUL})]


def _column_without_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("columns must not contain NUL characters")
    return value


Column = Annotated[
    str, Field(min_length=1, max_length=200, json_schema_extra={"pattern": NO_NUL}), AfterValidator(_column_without_nul)
]
SourceName = Annotated[str, Field(max_length=64, json_schema_extra={"pattern": NO_NUL})]
TechniqueId = Annotated[str, Field(pattern=TECHNIQUE_PATTERN)]
PlatformName = Annotated[str, Field(max_length=64, json_schema_extra={"enum": list(platform_names())})]
# ATT&CK's domains as secrag/attack_domains.py names them (a unit test keeps the two equal).
AttackDomain = Literal["enterprise", "mobile", "ics"]


def canonical_platforms(value: list[str] | None) -> list[str] | None:
    """Platform names as users type them (Windows, Mac OS, k8s) onto the stored vocabulary, sorted; a
    ValueError names the unknown ones."""
    if value is None:
        return None
    unknown = [v for v in value if canonical(v) is None]
    if unknown:
        raise ValueError(
            f"unknown platforms: {', '.join(repr(u[:30]) for u in unknown[:5])}; known: {', '.join(PLATFORMS)}"
        )
    return sorted({c for c in map(canonical, value) if c})


class SearchFilters(Strict):
    """Restrict results; every filter is ANDed. Arrays match when any element matches (tags_all: all)."""

    sources: list[SourceName] | None = Field(
        default=None,
        max_length=64,
        description="Source names in any case (see /v1/sources; the enum lists the online sources of this "
        "deployment, and the user folders the caller may see are accepted too); an unknown name is a 422.",
    )
    source_contains: Annotated[str, Field(min_length=1, max_length=64, pattern=QUERY_PATTERN)] | None = Field(
        default=None,
        description="Only sources whose name contains this text, in any case (`mitre` matches mitre_attack, "
        "mitre_car, ...; user folders the caller may see included); ANDed with `sources`.",
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
    domains: list[AttackDomain] | None = Field(
        default=None,
        min_length=1,
        max_length=3,
        description="ATT&CK domains (enterprise, mobile, ics): ATT&CK's own documents of these domains, and the "
        "other documents labelled with a technique of one of them (a result's `domains`); a document with no "
        "domain is left out. The procedures leg then votes with these domains' procedure examples. Default: "
        "every document, whatever its domain.",
    )
    tags_any: list[Text] | None = Field(default=None, max_length=100)
    tags_all: list[Text] | None = Field(default=None, max_length=100)
    updated_after: IsoDatetime | None = None
    updated_before: IsoDatetime | None = None
    created_after: IsoDatetime | None = Field(
        default=None, description="Documents first published at or after this time (created_at)."
    )
    created_before: IsoDatetime | None = Field(default=None, description="Documents first published before this time.")

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
        return canonical_platforms(value)

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


# A caller's query vector: each value within +-MAX_EMBEDDING_VALUE and at least one at least
# MIN_EMBEDDING_NORM_VALUE from zero, so its norm is non-zero in float32 too (what the schema's
# `contains` says in JSON Schema).
MAX_EMBEDDING_VALUE = 1e6
MIN_EMBEDDING_NORM_VALUE = 1e-6
EMBEDDING_NON_ZERO: dict[str, JsonValue] = {
    "anyOf": [{"minimum": MIN_EMBEDDING_NORM_VALUE}, {"maximum": -MIN_EMBEDDING_NORM_VALUE}]
}


class QueryEmbedding(Strict):
    """The query's vector, made by the caller with the serving model."""

    model: str = Field(
        min_length=1,
        max_length=64,
        description="The model id the vector was made with; it must be the serving model (GET /v1/stats "
        "`serving_model`, and the only value this document allows once the API is up): equal dimensions do "
        "not mean the same model.",
    )
    values: list[Annotated[float, Field(ge=-MAX_EMBEDDING_VALUE, le=MAX_EMBEDDING_VALUE), NUMBER]] = Field(
        min_length=1,
        max_length=4096,
        description="The vector: as many values as the serving model has dimensions (minItems/maxItems), of "
        "any magnitude (it is normalised), not zero.",
        json_schema_extra={"contains": EMBEDDING_NON_ZERO},
    )

    @field_validator("values")
    @classmethod
    def _not_zero(cls, values: list[float]) -> list[float]:
        if not any(abs(v) >= MIN_EMBEDDING_NORM_VALUE for v in values):
            raise ValueError(f"query_embedding must have a value at least {MIN_EMBEDDING_NORM_VALUE} from zero")
        return values


class SearchRequest(Strict):
    """A search over chunks of the documents the caller may see."""

    query: str = query_field("What to search for.")
    query_embedding: QueryEmbedding | None = Field(
        default=None,
        description="The query's vector made by the caller with the serving model: the vector leg searches it "
        "instead of encoding `query`, which the full-text and fuzzy legs still search. A vector of another model "
        "or length is a 422.",
    )
    k: SInt = Field(default=10, ge=1, le=HARD_MAX_K, description="Results per page (at most this deployment's max_k).")
    offset: SInt = Field(default=0, ge=0, le=1000)
    mode: Literal["hybrid", "fts", "vector", "fuzzy"] = "hybrid"
    strategy: Literal["fuse", "fts_then_vec"] = Field(default="fuse", description="Hybrid strategy.")
    fts_k: Annotated[int, Field(ge=1, le=HARD_MAX_CANDIDATES), NUMBER] | None = Field(
        default=None, description="Full-text candidates (hybrid)."
    )
    vec_k: Annotated[int, Field(ge=1, le=HARD_MAX_CANDIDATES), NUMBER] | None = Field(
        default=None, description="Vector candidates (hybrid)."
    )
    rrf_k0: SInt = Field(default=60, ge=1, le=1000, description="Reciprocal-rank constant.")
    w_fts: SFloat = Field(default=1.0, ge=0, le=10)
    w_vec: SFloat = Field(default=1.0, ge=0, le=10)
    w_fuzzy: SFloat = Field(
        default=0.5, ge=0, le=10, description="Weight of the trigram leg (used for queries up to 64 characters)."
    )
    candidates_k: SInt = Field(
        default=100, ge=1, le=HARD_MAX_CANDIDATES, description="fts_then_vec: full-text candidates re-ranked by vector."
    )
    rerank_k: SInt = Field(
        default=50,
        ge=1,
        le=HARD_MAX_CANDIDATES,
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


def _no_nul(ids: list[str]) -> list[str]:
    if any("\x00" in i for i in ids):
        raise ValueError("ids must not contain NUL characters")
    return ids


Ids = Annotated[list[Text], AfterValidator(_no_nul)]  # documents or chunks by id (PostgreSQL text has no NUL)


class IdsRequest(Strict):
    ids: Ids = Field(min_length=1, max_length=MAX_IDS)
