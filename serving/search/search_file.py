"""Source boosts, per-mode and per-shape score thresholds, per-model vector thresholds and the tuning of
mapping a text, read from a YAML file at startup."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Literal, TypeVar, get_args

from pydantic import Field, field_validator

from secrag.config_files import ConfigModel, FieldError, load_model
from secrag.embedder import ALLOWLIST
from serving.contract.query_classes import DEFAULT_SHAPE, QUERY_SHAPES, check_names

Mode = Literal["hybrid", "fts", "vector", "fuzzy"]
DocumentScore = Literal["max", "top2", "rrf"]  # a document's score from its chunks' (serving/search/fusion.py window)
MODES: tuple[Mode, ...] = get_args(Mode)


class Neighbours(ConfigModel):
    """The neighbours leg of hybrid text queries (kNN label transfer: sql/queries/serving.sql,
    leg_neighbours). It costs one more nearest-neighbour scan, about 4.5 ms of PostgreSQL per query on
    the full store; weight 0 turns it off."""

    weight: float = Field(default=1.0, ge=0, le=10, description="RRF weight beside full text and vectors at 1.0.")
    documents: int = Field(default=5, ge=1, le=50, description="How many nearest documents vote.")
    chunks: int = Field(default=40, ge=1, le=400, description="Nearest chunks read to find those documents.")


# The 5th percentile of the labelled dev queries' top scores per mode (serving/search/search.yaml `attention`).
LOW_SCORES: dict[Mode, float] = {"hybrid": 0.66, "fts": 0.60, "vector": 0.57, "fuzzy": 0.67}


class Attention(ConfigModel):
    """When a query-log row is flagged for a person's look (serving/feedback/attention.py)."""

    low_score: dict[Mode, float] = Field(
        default_factory=lambda: dict(LOW_SCORES),
        description="Per mode, a top score under this is flagged low_score.",
    )
    weak_attack_match: float = Field(
        default=0.5, ge=0, le=1, description="Best score of a result of a named ATT&CK id under which it is flagged."
    )


class MapTuning(ConfigModel):
    """How POST /v1/map reads the search of each sentence of a text (serving/mapping)."""

    min_score: float = Field(
        default=0.3, ge=0, le=1, description="The default min_score of a map: techniques scoring under it are left out."
    )
    rank_precision: list[Annotated[float, Field(ge=0, le=1)]] = Field(
        default_factory=lambda: [0.35, 0.13, 0.10],
        min_length=1,
        max_length=20,
        description="The vote of a sentence's first, second, ... technique document: the share of labelled "
        "sentences whose technique at that rank was right. As many technique documents vote as it has values.",
    )
    candidates: int = Field(
        default=10,
        ge=1,
        le=50,
        description="Results each sentence's search reads; groups, software and mitigations among them do not vote.",
    )


class LegWeights(ConfigModel):
    """Hybrid leg weights for one query shape; unset legs keep their defaults (the request's w_fts,
    w_vec, w_fuzzy; the label leg's 1.0; `neighbours.weight`)."""

    fts: float | None = Field(default=None, ge=0, le=10)
    vec: float | None = Field(default=None, ge=0, le=10)
    fuzzy: float | None = Field(default=None, ge=0, le=10)
    label: float | None = Field(default=None, ge=0, le=10)
    neighbours: float | None = Field(default=None, ge=0, le=10)


@dataclass(frozen=True)
class SearchConfig:
    """Boost per source name; threshold per mode and query shape (`default` as the fallback); the
    neighbours leg's settings."""

    source_boosts: Mapping[str, float] = field(default_factory=dict)
    thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    neighbours: Neighbours = field(default_factory=Neighbours)
    class_weights: Mapping[str, LegWeights] = field(default_factory=dict)
    document_score: DocumentScore = "max"
    attention: Attention = field(default_factory=Attention)
    vector_thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    map: MapTuning = field(default_factory=MapTuning)

    def vector_threshold(self, model_id: str, query_type: str) -> float | None:
        """The cosine similarity under which the vector leg's candidates are dropped, for this model and
        query shape (its `default` for shapes not listed); None when none is configured for the model."""
        per_shape = self.vector_thresholds.get(model_id)
        if per_shape is None:
            return None
        return per_shape.get(query_type, per_shape.get(DEFAULT_SHAPE))

    def weights(self, query_type: str) -> LegWeights:
        """The leg weights configured for this query shape (every field None when none are)."""
        return self.class_weights.get(query_type) or LegWeights()

    def boost(self, source: str) -> float:
        return self.source_boosts.get(source, 1.0)

    def threshold(self, mode: str, query_type: str) -> float:
        per_mode = self.thresholds.get(mode, {})
        return per_mode.get(query_type, per_mode.get(DEFAULT_SHAPE, 0.0))


K = TypeVar("K", bound=str)


def _per_shape(by_key: dict[K, dict[str, float]]) -> dict[K, dict[str, float]]:
    """Each value keyed by query shape (or `default`); FieldError at `<key>.<name>` otherwise."""
    for key, per_shape in by_key.items():
        try:
            check_names(per_shape, (DEFAULT_SHAPE, *QUERY_SHAPES), "query shape")
        except FieldError as exc:
            raise FieldError((key, *exc.loc), str(exc)) from exc
    return by_key


class SearchConfigFile(ConfigModel):
    """search.yaml as written."""

    source_boosts: dict[str, float] = Field(default_factory=dict)
    thresholds: dict[Mode, dict[str, float]] = Field(default_factory=dict)
    neighbours: Neighbours = Field(default_factory=Neighbours)
    class_weights: dict[str, LegWeights] = Field(default_factory=dict)
    document_score: DocumentScore = "max"
    attention: Attention = Field(default_factory=Attention)
    vector_thresholds: dict[str, dict[str, Annotated[float, Field(ge=-1.0, le=1.0)]]] = Field(default_factory=dict)
    map: MapTuning = Field(default_factory=MapTuning)

    @field_validator("vector_thresholds")
    @classmethod
    def _models_and_shapes(cls, thresholds: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        check_names(thresholds, sorted(ALLOWLIST), "embedding model")
        return _per_shape(thresholds)

    @field_validator("class_weights")
    @classmethod
    def _weight_shapes(cls, weights: dict[str, LegWeights]) -> dict[str, LegWeights]:
        check_names(weights, QUERY_SHAPES, "query shape")
        return weights

    @field_validator("source_boosts")
    @classmethod
    def _positive(cls, boosts: dict[str, float]) -> dict[str, float]:
        for source, boost in boosts.items():
            if not 0 < boost <= 10:
                raise FieldError((source,), f"a boost must be in (0, 10], not {boost}")
        return boosts

    @field_validator("thresholds")
    @classmethod
    def _shapes(cls, thresholds: dict[Mode, dict[str, float]]) -> dict[Mode, dict[str, float]]:
        return _per_shape(thresholds)


def load_search_config(path: Path) -> SearchConfig:
    """Parse the YAML file; a missing file means no boosts and no thresholds."""
    if not path.exists():
        return SearchConfig()
    raw = load_model(path, SearchConfigFile)
    return SearchConfig(
        source_boosts=MappingProxyType(dict(raw.source_boosts)),
        thresholds=MappingProxyType({mode: MappingProxyType(dict(v)) for mode, v in raw.thresholds.items()}),
        neighbours=raw.neighbours,
        class_weights=MappingProxyType(dict(raw.class_weights)),
        document_score=raw.document_score,
        attention=raw.attention,
        vector_thresholds=MappingProxyType(
            {model: MappingProxyType(dict(v)) for model, v in raw.vector_thresholds.items()}
        ),
        map=raw.map,
    )
