"""Retrieval-plan configuration: loading, validation with clear errors, and per-query-type resolution."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from secrag.errors import ConfigError
from secrag.package_data import package_path


def default_plans_file() -> Path:
    """The plans shipped with secrag (serving/plans.yaml)."""
    return package_path("serving", "plans.yaml")


QueryType = Literal["default", "mitre_id", "vulnerability", "detection", "forensic", "lolbin", "test"]
QUERY_TYPES: tuple[str, ...] = get_args(QueryType)  # the one list: plan names, request schema, overrides


class Plan(BaseModel):
    """One resolved plan: how many chunks, which mix, which limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
        if any(v < 0 or v > 1 for v in quotas.values()):
            raise ValueError("quota ratios must be between 0 and 1")
        total = sum(quotas.values())
        if not 0.99 <= total <= 1.01:
            raise ValueError(f"quota ratios must sum to 1 (they sum to {total:.2f})")
        return quotas

    @field_validator("category_boosts", "source_boosts")
    @classmethod
    def _boosts(cls, boosts: dict[str, float]) -> dict[str, float]:
        if any(not 0 < v <= 10 for v in boosts.values()):
            raise ValueError("boosts must be in (0, 10]")
        return boosts

    @model_validator(mode="after")
    def _minimums(self) -> Plan:
        if any(v < 0 for v in self.min_per_category.values()):
            raise ValueError("min_per_category values must be >= 0")
        if sum(self.min_per_category.values()) > self.total_chunks:
            raise ValueError("min_per_category adds up to more than total_chunks")
        return self


class Classification(BaseModel):
    """Deterministic query-classification rules."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id_rules: dict[str, str]
    keywords: dict[str, list[str]]
    platforms: list[str]

    @field_validator("id_rules")
    @classmethod
    def _regexes(cls, rules: dict[str, str]) -> dict[str, str]:
        for name, pattern in rules.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"id rule {name!r} is not a valid regex: {exc}") from exc
        return rules


class PlansConfig(BaseModel):
    """The whole plans file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    categories: list[str]
    classification: Classification
    default: Plan
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    tuning: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> PlansConfig:
        known = set(self.categories)
        unknown_types = set(self.overrides) - set(QUERY_TYPES)
        if unknown_types:
            raise ValueError(
                f"overrides for unknown query types: {', '.join(sorted(unknown_types))} "
                f"(known: {', '.join(QUERY_TYPES)})"
            )
        for name in ("default", *self.overrides):
            plan = self.resolve(name)
            for field in ("quotas", "min_per_category", "category_boosts"):
                extra = set(getattr(plan, field)) - known
                if extra:
                    raise ValueError(f"plan {name!r}: {field} names unknown categories {', '.join(sorted(extra))}")
        return self

    def resolve(self, query_type: str) -> Plan:
        """The default plan with the query type's overrides applied (validated)."""
        override = self.overrides.get(query_type, {})
        merged = {**self.default.model_dump(), **override}
        try:
            return Plan(**merged)
        except ValidationError as exc:
            raise ValueError(f"plan {query_type!r}: {_first_error(exc)}") from exc

    def category_of(self, category: str | None, kind: str = "online") -> str:
        """The plan category of a source whose registry category (served by the store) is `category`."""
        if kind == "user_folder" or not category or category not in self.categories:
            return "user"
        return category


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]


def load_plans(path: Path) -> PlansConfig:
    """Read and validate a plans file; ConfigError with the file and the failing field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read plans file {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"plans file {path} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"plans file {path} must be a mapping")
    tuned = path.with_name(path.stem + ".tuned.yaml")
    if tuned.exists():  # thresholds approved with `secrag tune apply`
        overlay = yaml.safe_load(tuned.read_text(encoding="utf-8")) or {}
        for query_type, value in (overlay.get("thresholds") or {}).items():
            target = (
                raw.setdefault("default", {})
                if query_type == "default"
                else raw.setdefault("overrides", {}).setdefault(query_type, {})
            )
            target["score_threshold"] = value
    try:
        return PlansConfig(**raw)
    except ValidationError as exc:
        raise ConfigError(
            f"plans file {path}: {_first_error(exc)}", hint="see serving/plans.yaml for the expected shape"
        ) from exc
    except ValueError as exc:
        raise ConfigError(f"plans file {path}: {exc}") from exc
