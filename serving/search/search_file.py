"""Source boosts, per-mode and per-shape score thresholds, per-model vector thresholds, the voter legs, leg
weights per query shape, the attention log's thresholds and the tuning of mapping a text: the shipped
search.yaml (the one place of every default), with an operator's file laid over it, read at startup. Every
threshold is a serving/contract/thresholds.py model (one validator: known classes, range)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from secrag.files.config_files import ConfigModel, FieldError, read_mapping, validate
from secrag.files.package_data import package_path
from secrag.models.registry import registry
from serving.contract.query_classes import QUERY_SHAPES, check_names
from serving.contract.thresholds import MODES as MODES
from serving.contract.thresholds import Mode as Mode
from serving.contract.thresholds import ModeThresholds, ShapeThresholds

DocumentScore = Literal["max", "top2", "rrf"]  # a document's score from its chunks' (serving/search/fusion.py window)


class Voters(ConfigModel):
    """A voter leg of hybrid text queries (kNN label transfer: sql/queries/serving.sql, leg_neighbours):
    the nearest documents of `sources` (any source when unset) vote for the techniques their labels name.
    Each costs one more nearest-neighbour scan (about 4.5 ms of PostgreSQL per query on the full store);
    weight 0 turns it off."""

    weight: float = Field(ge=0, le=10, description="RRF weight beside full text and vectors at 1.0.")
    documents: int = Field(ge=1, le=50, description="How many nearest documents vote.")
    chunks: int = Field(ge=1, le=400, description="Nearest chunks read to find those documents.")
    sources: list[str] | None = Field(default=None, description="The sources whose documents vote (unset: any).")


class EfStep(ConfigModel):
    """From a store of `chunks` chunks up, the HNSW walk keeps `ef` candidates (pgvector's hnsw.ef_search)."""

    chunks: int = Field(ge=0, description="Chunks in the store (PostgreSQL's estimate) from which `ef` applies.")
    ef: int = Field(
        ge=10, le=1000, description="hnsw.ef_search (a request asking for more vector candidates gets more)."
    )


class Attention(ConfigModel):
    """When a query-log row is flagged for a person's look (serving/feedback/attention.py)."""

    low_score: ModeThresholds = Field(description="Per mode, a top score under this is flagged low_score.")
    weak_attack_match: float = Field(
        ge=0, le=1, description="Best score of a result of a named ATT&CK id under which it is flagged."
    )


# The evidence of a map's candidate technique that the selector weighs (serving/mapping/selector.py).
MAP_FEATURES = (
    "share",
    "share_margin",
    "example_sim",
    "near_sim",
    "doc_sim",
    "doc_margin",
    "vote_top",
    "doc_top",
    "named",
    "name_found",
    "sub_technique",
)


def known_features(weights: dict[str, float], known: tuple[str, ...]) -> dict[str, float]:
    """The weights, when each names one of the `known` features."""
    unknown = sorted(set(weights) - set(known))
    if unknown:
        raise ValueError(f"unknown features {unknown}; known: {', '.join(known)}")
    return weights


class MapSelector(ConfigModel):
    """The map's selector: each sentence's candidates from the held vectors, scored by a logistic model."""

    voters: int = Field(ge=1, le=200, description="The nearest procedure examples that vote.")
    top: int = Field(ge=1, le=50, description="Candidates per sentence: the best by vote and by document.")
    intercept: float
    weights: dict[str, float] = Field(description="Coefficient per feature (MAP_FEATURES).")
    floor: float = Field(
        default=0.05, ge=0, le=1, description="A sentence's candidates under this probability are not evidence."
    )

    @field_validator("weights")
    @classmethod
    def _known(cls, weights: dict[str, float]) -> dict[str, float]:
        return known_features(weights, MAP_FEATURES)


# A technique's evidence across a text that the map's decision weighs (serving/mapping/decision.py).
DECISION_FEATURES = (
    "best",
    "second",
    "strong",
    "mass",
    "family_gap",
    "parent_gap",
    "sub_technique",
    "length",
    "prior",
    "family_prior",
)


class MapDecision(ConfigModel):
    """The map's report-level decision: a logistic model over each technique's verified evidence across the text."""

    intercept: float
    weights: dict[str, float] = Field(description="Coefficient per feature (DECISION_FEATURES).")

    @field_validator("weights")
    @classmethod
    def _known(cls, weights: dict[str, float]) -> dict[str, float]:
        return known_features(weights, DECISION_FEATURES)


class MapTuning(ConfigModel):
    """How POST /v1/map reads the search of each sentence of a text (serving/mapping)."""

    min_score: float = Field(
        ge=0, le=1, description="The default min_score of a map: techniques scoring under it are left out."
    )
    rank_precision: list[Annotated[float, Field(ge=0, le=1)]] = Field(
        min_length=1,
        max_length=20,
        description="The vote of a sentence's first, second, ... technique document: the share of labelled "
        "sentences whose technique at that rank was right. As many technique documents vote as it has values.",
    )
    candidates: int = Field(
        ge=1,
        le=50,
        description="Results each sentence's search reads; groups, software and mitigations among them do not vote.",
    )
    selector: MapSelector | None = Field(
        default=None,
        description="The sentence model's path (secrag/mapping/candidates.py, selector.py); without it, or while no "
        "sentence model serves, each sentence is searched and votes by rank_precision.",
    )
    verify: bool = Field(
        default=False,
        description="Score the candidates by the verifier trained beside the served sentence model (and set aside "
        "the sentences its behaviour gate finds no behaviour in) instead of the selector, when it has one.",
    )
    decision: MapDecision | None = Field(
        default=None,
        description="The report-level decision (serving/mapping/decision.py); without it, noisy-or combines.",
    )


class LegWeights(ConfigModel):
    """Hybrid leg weights for one query shape; unset legs keep their defaults (the request's w_fts,
    w_vec, w_fuzzy; the label leg's 1.0; `neighbours.weight`)."""

    fts: float | None = Field(default=None, ge=0, le=10)
    vec: float | None = Field(default=None, ge=0, le=10)
    fuzzy: float | None = Field(default=None, ge=0, le=10)
    label: float | None = Field(default=None, ge=0, le=10)
    neighbours: float | None = Field(default=None, ge=0, le=10)
    procedures: float | None = Field(default=None, ge=0, le=10)
    verified: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="A report sentence's technique documents score 1 - (1 - score)(1 - this x p), p the "
        "probability the verifier beside the serving sentence model gives them (serving/search/verified_ranking.py).",
    )
    scored: dict[Literal["procedures", "neighbours"], Annotated[float, Field(ge=0, le=10)]] = Field(
        default_factory=dict,
        description="Voter legs whose votes count as scores too: each document adds weight x its vote divided "
        "by the leg's best vote in this search, beside its reciprocal rank (a vote of 15 of 20 nearest "
        "examples is not a rank).",
    )


@dataclass(frozen=True)
class SearchConfig:
    """Boost per source name; threshold per mode and query shape (`default` as the fallback); the voter
    legs' settings and how many documents per technique they and the label leg rank; hnsw.ef_search by the
    store's size; leg weights per query shape; the attention log's thresholds. Made by
    `load_search_config` from the shipped search.yaml (and an operator's file over it)."""

    source_boosts: Mapping[str, float]
    thresholds: Mapping[str, ShapeThresholds]
    neighbours: Voters
    procedures: Voters
    label_candidates: int
    ef_search: tuple[EfStep, ...]
    class_weights: Mapping[str, LegWeights]
    document_score: DocumentScore
    attention: Attention
    vector_thresholds: Mapping[str, ShapeThresholds]
    map: MapTuning

    def vector_threshold(self, model_id: str, query_type: str) -> float | None:
        """The cosine similarity under which the vector leg's candidates are dropped, for this model and
        query shape (its `default` for shapes not listed); None when none is configured for the model."""
        per_shape = self.vector_thresholds.get(model_id)
        return None if per_shape is None else per_shape.of(query_type)

    def ef_search_for(self, chunks: float) -> int:
        """hnsw.ef_search for a store of this many chunks: the last step it has reached."""
        reached = [step.ef for step in self.ef_search if step.chunks <= chunks]
        return reached[-1] if reached else self.ef_search[0].ef

    def weights(self, query_type: str) -> LegWeights:
        """The leg weights configured for this query shape (every field None when none are)."""
        return self.class_weights.get(query_type) or LegWeights()

    def boost(self, source: str) -> float:
        return self.source_boosts.get(source, 1.0)

    def threshold(self, mode: str, query_type: str) -> float:
        per_mode = self.thresholds.get(mode)
        found = None if per_mode is None else per_mode.of(query_type)
        return 0.0 if found is None else found


class SearchConfigFile(ConfigModel):
    """search.yaml as written: the shipped file states every field."""

    source_boosts: dict[str, float]
    thresholds: dict[Mode, ShapeThresholds]
    neighbours: Voters
    procedures: Voters
    label_candidates: int = Field(
        ge=10,
        le=100_000,
        description="Documents per technique the label and voter legs rank at most (fewest labels first).",
    )
    ef_search: list[EfStep] = Field(min_length=1, max_length=20)
    class_weights: dict[str, LegWeights]
    document_score: DocumentScore
    attention: Attention
    vector_thresholds: dict[str, ShapeThresholds]
    map: MapTuning

    @field_validator("ef_search")
    @classmethod
    def _ascending(cls, steps: list[EfStep]) -> list[EfStep]:
        if [s.chunks for s in steps] != sorted({s.chunks for s in steps}) or steps[0].chunks != 0:
            raise FieldError((), "steps must start at chunks 0 and grow, each size once")
        return steps

    @field_validator("vector_thresholds")
    @classmethod
    def _models(cls, thresholds: dict[str, ShapeThresholds]) -> dict[str, ShapeThresholds]:
        check_names(thresholds, registry().ids(), "embedding model")
        return thresholds

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


def shipped_search_config() -> Path:
    """The search.yaml shipped with the API: every default of the search's tuning, measured."""
    return package_path("serving.search", "search.yaml")


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` laid on `base`: mappings merged key by key, any other value of `over` replacing `base`'s."""
    out = dict(base)
    for key, value in over.items():
        below = out.get(key)
        out[key] = merged(below, value) if isinstance(below, Mapping) and isinstance(value, Mapping) else value
    return out


def load_search_config(path: Path | None = None) -> SearchConfig:
    """The shipped search.yaml with the file at `path` (SECRAG_SEARCH_CONFIG) laid over it (`merged`), so
    an operator's file states only what it changes; a missing file changes nothing. A ConfigError names
    the file, the line and the field."""
    shipped = shipped_search_config()
    data, node = read_mapping(shipped)
    named = shipped
    if path is not None and path.exists() and path.resolve() != shipped.resolve():
        over, node = read_mapping(path)
        data, named = merged(data, over), path
    raw = validate(named, node, data, SearchConfigFile)
    return SearchConfig(
        source_boosts=MappingProxyType(dict(raw.source_boosts)),
        thresholds=MappingProxyType({str(mode): per_shape for mode, per_shape in raw.thresholds.items()}),
        neighbours=raw.neighbours,
        procedures=raw.procedures,
        label_candidates=raw.label_candidates,
        ef_search=tuple(raw.ef_search),
        class_weights=MappingProxyType(dict(raw.class_weights)),
        document_score=raw.document_score,
        attention=raw.attention,
        vector_thresholds=MappingProxyType(dict(raw.vector_thresholds)),
        map=raw.map,
    )
