"""The tuned-threshold overlay `secrag tune apply` writes beside the plans file, and its audit history."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from secrag.config_files import ConfigModel, load_model

from .query_classes import QueryType


class Change(ConfigModel):
    """One approved threshold change: who, when, which type, old and new value, why."""

    who: str
    when: str
    query_type: QueryType
    field: Literal["score_threshold"]
    old: float
    new: float
    reason: str


class Overlay(ConfigModel):
    """`<plans>.tuned.yaml`: the approved score threshold per query type and the recent changes."""

    thresholds: dict[QueryType, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(default_factory=dict)
    history: list[Change] = Field(default_factory=list)


def overlay_path(plans_file: Path) -> Path:
    """Approved tuning lives beside the plans file, so the hand-written file keeps its comments."""
    return plans_file.with_name(plans_file.stem + ".tuned.yaml")


def load_overlay(plans_file: Path) -> Overlay:
    """The overlay of `plans_file` (empty when there is none); ConfigError naming file:line:field."""
    path = overlay_path(plans_file)
    return load_model(path, Overlay) if path.exists() else Overlay()
