"""Request and response models of POST /v1/coverage: per ATT&CK technique, what the store holds of each kind
(detections, tests, countermeasures, the caller's own notes), the gaps, and a Navigator layer of it."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, Field, field_validator, model_validator

from serving.contract.navigator_layer import NavigatorLayer
from serving.contract.requests import SBool, SInt, Strict, TechniqueId

# Hard caps of the request model (no configuration widens them).
MAX_COVERAGE_TECHNIQUES = 200
MAX_COVERAGE_TOP = 10
DEFAULT_TOP = 3
ACTOR_PATTERN = r"^[GgSsCc]\d{4}$"
Kind = Literal["detections", "tests", "countermeasures", "notes"]


class CoverageRequest(Strict):
    techniques: list[TechniqueId] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_COVERAGE_TECHNIQUES,
        description="ATT&CK technique ids (T#### or T####.###). Give these or `actor`, not both.",
    )
    actor: Annotated[str, Field(pattern=ACTOR_PATTERN)] | None = Field(
        default=None,
        description="An ATT&CK group (G####), software (S####) or campaign (C####): its techniques are those its "
        "ATT&CK procedure examples and its ATT&CK document name. Give this or `techniques`, not both.",
    )
    fold_subtechniques: SBool = Field(
        default=False,
        description="Fold sub-techniques into their parents: T1003.001 is asked as T1003, and a parent counts "
        "the documents labelled with any of its sub-techniques (each document once).",
    )
    top: SInt = Field(default=DEFAULT_TOP, ge=1, le=MAX_COVERAGE_TOP, description="Items listed per kind.")
    layer: SBool = Field(default=True, description="Also return the ATT&CK Navigator layer of the coverage.")

    @field_validator("techniques")
    @classmethod
    def _upper(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(t.upper() for t in value))

    @field_validator("actor")
    @classmethod
    def _actor(cls, value: str | None) -> str | None:
        return None if value is None else value.upper()

    @model_validator(mode="after")
    def _one_input(self) -> Self:
        if (self.techniques is None) == (self.actor is None):
            raise ValueError("give either techniques or actor")
        return self


class CoverageItem(BaseModel):
    doc_id: str
    title: str
    source: str


class KindCoverage(BaseModel):
    count: int = Field(description="Documents of this kind labelled with the technique that the caller may see.")
    by_source: dict[str, int] = Field(description="The count per source (for detections: per rule set).")
    top: list[CoverageItem] = Field(description="The first `top` of them, by title then doc_id.")


class TechniqueCoverage(BaseModel):
    technique_id: str
    name: str | None = Field(description="The technique's full name; null for an id the store does not know.")
    detections: KindCoverage
    tests: KindCoverage
    countermeasures: KindCoverage
    notes: KindCoverage = Field(description="The caller's own folder documents labelled with the technique.")


class CoverageGaps(BaseModel):
    no_detection: list[str] = Field(description="Techniques with no detection.")
    test_no_detection: list[str] = Field(description="Techniques with a test but no detection.")
    detection_no_test: list[str] = Field(description="Techniques with a detection but no test.")


class CoverageResponse(BaseModel):
    techniques: list[TechniqueCoverage] = Field(description="The asked techniques, by id.")
    gaps: CoverageGaps
    actor: str | None = Field(default=None, description="The group, software or campaign asked, if any.")
    layer: NavigatorLayer | None = Field(
        default=None, description="The ATT&CK Navigator layer (format 4.5) of the coverage; null when not asked."
    )
    took_ms: float
