"""The ATT&CK Navigator's layer file, format 4.5 (mitre-attack/attack-navigator, layers/LAYERFORMATv4_5.md): the
part of it a map writes. Field names are the format's own (camelCase)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

LAYER_FORMAT: Literal["4.5"] = "4.5"
LayerDomain = Literal["enterprise-attack", "mobile-attack", "ics-attack"]
NAVIGATOR_VERSION = "5.1.0"  # the format asks for a Navigator of at least 4.9.0


class LayerVersions(BaseModel):
    attack: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,  # the format wants a string or nothing, not null
        description="ATT&CK's major version of the store's technique data; absent when not known.",
    )
    navigator: str = NAVIGATOR_VERSION
    layer: Literal["4.5"] = LAYER_FORMAT


class LayerMetadata(BaseModel):
    name: str
    value: str


class LayerTechnique(BaseModel):
    techniqueID: str = Field(description="T#### or T####.###.")
    tactic: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="The tactic (short name) the entry is under; absent: every tactic of the technique.",
    )
    score: int | float | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="A map's: 100 x the technique's map score, rounded; a coverage's: the kinds covering it (0-3); "
        "a comparison's: its operands', as the request's `scores` says. Absent: unscored.",
    )
    comment: str = Field(description="Why the technique is in the layer (a map's: its supporting sentences).")
    enabled: bool = True
    showSubtechniques: bool = Field(default=False, description="A mapped parent opens on its mapped sub-techniques.")
    metadata: list[LayerMetadata] = Field(default_factory=list)


class Gradient(BaseModel):
    colors: list[str] = Field(min_length=2)
    minValue: float
    maxValue: float


class LegendItem(BaseModel):
    label: str
    color: str


class LayerLayout(BaseModel):
    layout: Literal["side", "flat", "mini"] = "side"
    showID: bool = True
    showName: bool = True
    expandedSubtechniques: Literal["none", "all", "annotated"] = "annotated"


class NavigatorLayer(BaseModel):
    """A layer the ATT&CK Navigator opens (Open Existing Layer > Upload from local)."""

    name: str
    versions: LayerVersions = Field(default_factory=LayerVersions)
    domain: LayerDomain = "enterprise-attack"
    description: str = ""
    sorting: int = Field(default=3, description="3: by score, highest first.")
    layout: LayerLayout = Field(default_factory=LayerLayout)
    hideDisabled: bool = False
    techniques: list[LayerTechnique]
    gradient: Gradient
    legendItems: list[LegendItem] = Field(default_factory=list)
    metadata: list[LayerMetadata] = Field(default_factory=list)
