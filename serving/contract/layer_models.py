"""ATT&CK Navigator layers as callers send them (formats 4.5 and 4.4, mitre-attack/attack-navigator
layers/spec/v4.5/layerformat.md), what the API read of one, and POST /v1/layers/compare's request and response."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from serving.contract.navigator_layer import LayerDomain, NavigatorLayer
from serving.contract.requests import NO_NUL, NUMBER, TECHNIQUE_PATTERN, SBool, Strict

# Hard caps of a layer (no configuration widens them): its entries (this deployment's SECRAG_LAYER_MAX_TECHNIQUES,
# at most this, is what a request is checked against) and its texts.
HARD_MAX_LAYER_TECHNIQUES = 10_000
MAX_LAYER_TEXT = 1000  # a name, a tactic
MAX_LAYER_COMMENT = 20_000  # a technique's comment, a layer's description
READ_FORMATS = ("4.4", "4.5")
TACTIC_SHORT_NAME = r"^[a-z][a-z0-9-]{0,63}$"


def _without_nul(value: str) -> str:
    """NO_NUL in words: the schema states it, this checks it."""
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


LayerText = Annotated[
    str, Field(max_length=MAX_LAYER_TEXT, json_schema_extra={"pattern": NO_NUL}), AfterValidator(_without_nul)
]
LayerComment = Annotated[
    str, Field(max_length=MAX_LAYER_COMMENT, json_schema_extra={"pattern": NO_NUL}), AfterValidator(_without_nul)
]
_SCORE_RANGE = Field(ge=-1_000_000_000, le=1_000_000_000)
# An integer stays one (a layer's score 3 is written back as 3); each variant states the bounds in the schema.
Score = Annotated[Annotated[int, _SCORE_RANGE] | Annotated[float, _SCORE_RANGE], NUMBER]
Operation = Literal["minus", "union", "intersect"]
Combine = Literal["left", "right", "max", "min", "sum"]


class Lenient(BaseModel):
    """A part of a layer: the fields this API reads are checked, the Navigator's others (filters, layout,
    gradient, colors, links, ...) are accepted and left unread."""

    model_config = ConfigDict(extra="ignore")


class LayerVersionsIn(Lenient):
    attack: LayerText | None = None
    navigator: LayerText | None = None
    layer: str = Field(
        description="The layer format: 4.5, or 4.4 which tools still write.",
        json_schema_extra={"enum": list(READ_FORMATS)},
    )

    @field_validator("layer")
    @classmethod
    def _format(cls, value: str) -> str:
        if value not in READ_FORMATS:
            raise ValueError(
                f"layer format {value[:20]!r} is not read (4.5 and 4.4 are): open the layer in the ATT&CK Navigator "
                "and save it, which writes 4.5"
            )
        return value


class LayerTechniqueIn(Lenient):
    techniqueID: str = Field(pattern=TECHNIQUE_PATTERN, description="T#### or T####.###.")
    tactic: Annotated[str, Field(pattern=TACTIC_SHORT_NAME)] | None = Field(
        default=None, description="The tactic (short name) the entry is under; absent: every tactic of the technique."
    )
    score: Score | None = Field(default=None, description="Absent: unscored.")
    comment: LayerComment = ""
    enabled: SBool = Field(default=True, description="A disabled entry is not part of the layer's technique set.")

    @field_validator("techniqueID")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()


class LayerIn(Lenient):
    """An ATT&CK Navigator layer, format 4.5 or 4.4: its techniques with their scores, comments, tactics and
    enabled flags, and its domain. Everything else in it is accepted and not read."""

    name: LayerText
    versions: LayerVersionsIn | None = Field(default=None, description="Absent: read as format 4.5.")
    domain: LayerDomain
    description: LayerComment = ""
    techniques: list[LayerTechniqueIn] = Field(
        default_factory=list,
        max_length=HARD_MAX_LAYER_TECHNIQUES,
        description="At most this deployment's layer_max_techniques entries (an entry per technique, or per "
        "technique and tactic).",
    )


class LayerReport(BaseModel):
    """What was read of a layer: its technique set and the entries left out of it, each with why."""

    name: str
    domain: LayerDomain
    format: str = Field(description="The layer format read: 4.5 or 4.4.")
    entries: int = Field(description="Technique entries in the layer.")
    techniques: int = Field(description="Distinct techniques in its technique set.")
    unknown: list[str] = Field(description="Technique ids the store's ATT&CK does not have: left out.")
    revoked: list[str] = Field(description="Techniques ATT&CK revoked: left out.")
    deprecated: list[str] = Field(description="Techniques ATT&CK deprecated: left out.")
    disabled: list[str] = Field(description="Techniques whose every entry is disabled: left out.")
    below_min_score: list[str] = Field(
        default_factory=list, description="Techniques under the asked min_score (or unscored then): left out."
    )
    unknown_tactics: list[str] = Field(
        default_factory=list,
        description="Tactics (short names) the store's ATT&CK does not have in the layer's domain: the entries "
        "under them are left out (a technique with no other entry too).",
    )


class CompareRequest(Strict):
    left: LayerIn = Field(description="A layer (its techniques are the left operand).")
    right: LayerIn = Field(description="Another layer (the right operand).")
    operation: Operation = Field(
        description="minus: the left's techniques the right lacks; union: the techniques of either; intersect: "
        "those of both."
    )
    scores: Combine = Field(
        default="left",
        description="A technique's score in the result: `left` (the left's, else the right's), `right` (the "
        "right's, else the left's), or `max`, `min`, `sum` of the scores it has (an unscored entry has none). "
        "minus keeps the left's.",
    )
    left_min_score: Score | None = Field(
        default=None,
        description="Only the left's entries scoring at least this count (unscored ones then do not): e.g. 1 for "
        "a coverage layer's covered techniques.",
    )
    right_min_score: Score | None = Field(
        default=None,
        description="Only the right's entries scoring at least this count: e.g. 1 when a rule layer lists "
        "undetected techniques with score 0.",
    )
    name: LayerText | None = Field(default=None, description="The result's name (default: said from the operands).")


class CompareResponse(BaseModel):
    layer: NavigatorLayer = Field(
        description="The result as an ATT&CK Navigator layer (format 4.5), in the left's domain: each technique "
        "with its score and a comment saying which layer it came from (with that layer's score and comment)."
    )
    techniques: list[str] = Field(description="The result's techniques, by id.")
    left: LayerReport
    right: LayerReport
    took_ms: float
