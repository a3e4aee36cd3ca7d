"""Retrieval-plan configuration: loading, validation with clear errors, and per-query-type resolution."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from secrag.files.config_files import ConfigModel, FieldError, load_model, nested_error
from serving.contract.query_classes import DEFAULT_TYPE, QueryType
from serving.contract.query_classes import (
    QUERY_TYPES as QUERY_TYPES,  # re-exported: the planner and `secrag tune` check names
)
from serving.contract.thresholds import TypeThresholds


class Plan(ConfigModel):
    """One resolved plan: how many chunks, which mix, which limits."""

    total_chunks: int = Field(ge=1, le=100)
    candidates_multiplier: int = Field(default=4, ge=1, le=20)
    quotas: dict[str, float]
    min_per_category: dict[str, int] = Field(default_factory=dict)
    category_boosts: dict[str, float] = Field(default_factory=dict)
    source_boosts: dict[str, float] = Field(default_factory=dict)
    score_threshold: float = Field(default=0.0, ge=0.0)
    char_budget: int = Field(default=16000, ge=100, le=1_000_000)
    max_chunks_per_doc: int = Field(default=1, ge=1, le=20)

    @field_validator("quotas")
    @classmethod
    def _ratios(cls, quotas: dict[str, float]) -> dict[str, float]:
        for category, ratio in quotas.items():
            if not 0 <= ratio <= 1:
                raise FieldError((category,), f"a quota ratio must be between 0 and 1, not {ratio}")
        total = sum(quotas.values())
        if not 0.99 <= total <= 1.01:
            raise ValueError(f"quota ratios must sum to 1 (they sum to {total:.2f})")
        return quotas

    @field_validator("category_boosts", "source_boosts")
    @classmethod
    def _boosts(cls, boosts: dict[str, float]) -> dict[str, float]:
        for name, boost in boosts.items():
            if not 0 < boost <= 10:
                raise FieldError((name,), f"a boost must be in (0, 10], not {boost}")
        return boosts

    @model_validator(mode="after")
    def _minimums(self) -> Plan:
        for category, minimum in self.min_per_category.items():
            if minimum < 0:
                raise FieldError(("min_per_category", category), "must be >= 0")
        if sum(self.min_per_category.values()) > self.total_chunks:
            raise FieldError(("min_per_category",), "adds up to more than total_chunks")
        return self


class Classification(ConfigModel):
    """Deterministic query-classification rules, keyed by the query type they select."""

    id_rules: dict[QueryType, str]
    keywords: dict[QueryType, list[str]]
    platforms: list[str]

    @field_validator("id_rules")
    @classmethod
    def _regexes(cls, rules: dict[QueryType, str]) -> dict[QueryType, str]:
        for name, pattern in rules.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise FieldError((name,), f"not a valid regex: {exc}") from exc
        return rules

    @model_validator(mode="after")
    def _every_type_reachable(self) -> Classification:
        for field in ("id_rules", "keywords"):
            if DEFAULT_TYPE in getattr(self, field):
                raise FieldError((field, DEFAULT_TYPE), "`default` is what no rule matched; it takes no rule")
        ruled = {*self.id_rules, *self.keywords}
        missing = [t for t in QUERY_TYPES if t != DEFAULT_TYPE and t not in ruled]
        if missing:
            raise ValueError(f"no id rule or keyword selects the query types {', '.join(missing)}")
        return self


MIN_HISTORY = 100
log = logging.getLogger(__name__)


class TuningBounds(ConfigModel):
    """Bounds `secrag tune` may move score thresholds within (hybrid scale (0, 1])."""

    threshold_min: float = Field(default=0.0, ge=0.0, le=1.0)
    threshold_max: float = Field(default=1.0, ge=0.0, le=1.0)
    max_step: float = Field(default=0.01, gt=0.0, le=1.0)
    # Audit entries kept in the store: at least MIN_HISTORY (a smaller value, as older plans files had, is
    # raised to it with a warning rather than failing the start).
    history: int = Field(default=MIN_HISTORY, ge=1, le=10_000)

    @field_validator("history")
    @classmethod
    def _at_least(cls, value: int) -> int:
        if value < MIN_HISTORY:
            log.warning(
                "tuning.history %d is raised to %d: the newest %d audit entries are kept",
                value,
                MIN_HISTORY,
                MIN_HISTORY,
            )
            return MIN_HISTORY
        return value

    @model_validator(mode="after")
    def _ordered(self) -> TuningBounds:
        if self.threshold_min > self.threshold_max:
            raise FieldError(("threshold_min",), "is above threshold_max")
        return self


DEFAULT_GROUNDED = (
    "Answer only from the numbered sources in the context below, and cite them as [n]. If they do not "
    "contain the answer, say that you cannot answer from the provided sources."
)


class Collection(ConfigModel):
    """Instructions for the model that reads a plan's context, for one collection (a source or a user
    folder, by name)."""

    system_prompt: str = Field(default="", max_length=4000)
    grounded_only: bool = False


class PlansConfig(ConfigModel):
    """The whole plans file."""

    categories: list[str]
    classification: Classification
    default: Plan
    overrides: dict[QueryType, dict[str, Any]] = Field(default_factory=dict)
    tuning: TuningBounds = Field(default_factory=TuningBounds)
    collections: dict[str, Collection] = Field(default_factory=dict)
    grounded_instruction: str = Field(default=DEFAULT_GROUNDED, min_length=1, max_length=4000)

    @model_validator(mode="after")
    def _consistent(self) -> PlansConfig:
        if DEFAULT_TYPE in self.overrides:
            raise FieldError(("overrides", DEFAULT_TYPE), "the default plan is the top-level `default:`")
        known = set(self.categories)
        for name in (DEFAULT_TYPE, *self.overrides):
            override = self.overrides.get(name, {})
            where: tuple[str, ...] = ("overrides", name) if name != DEFAULT_TYPE else ("default",)
            try:
                plan = self.resolve(name)
            except ValidationError as exc:
                raise nested_error(exc, where) from exc
            for field in ("quotas", "min_per_category", "category_boosts"):
                extra = sorted(set(getattr(plan, field)) - known)
                if extra:
                    origin = where if field in override else ("default",)
                    raise FieldError(
                        (*origin, field, extra[0]),
                        f"unknown category {extra[0]!r}; known: {', '.join(self.categories)}",
                    )
        return self

    def resolve(self, query_type: str) -> Plan:
        """The default plan with the query type's overrides applied (validated)."""
        override = next((o for t, o in self.overrides.items() if t == query_type), {})
        return Plan.model_validate({**self.default.model_dump(), **override})

    def with_thresholds(self, thresholds: TypeThresholds) -> dict[str, Any]:
        """This config's data with tuned score thresholds applied (to validate again)."""
        data = self.model_dump()
        for query_type, value in thresholds.items():
            target = data["default"] if query_type == DEFAULT_TYPE else data["overrides"].setdefault(query_type, {})
            target["score_threshold"] = value
        return data

    def category_of(self, category: str | None, kind: str = "online") -> str:
        """The plan category of a source whose registry category (served by the store) is `category`."""
        if kind == "user_folder" or not category or category not in self.categories:
            return "user"
        return category


def load_plans(path: Path) -> PlansConfig:
    """Read and validate a plans file (the thresholds approved with `secrag tune apply` live in the store:
    serving/feedback/tuned_plans.py)."""
    former = path.with_name(path.stem + ".tuned.yaml")
    if former.exists():
        log.warning(
            "%s is no longer read: approved thresholds live in the store. Apply each again with "
            "`secrag tune apply TYPE VALUE --reason ...`, then delete the file",
            former,
        )
    return load_model(path, PlansConfig)
