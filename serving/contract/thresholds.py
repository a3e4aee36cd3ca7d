"""Score thresholds keyed by query class, in one model with one validator: the search's minimum scores (per
mode and query shape, search.yaml `thresholds`), the vector leg's floors (per model and query shape,
`vector_thresholds`), the attention log's low scores (per mode, `attention.low_score`) and the plans' score
thresholds approved by `secrag tune apply` (per query type, the store's tuned values)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar, Literal, Self, get_args

from pydantic import ConfigDict, RootModel, model_validator

from secrag.files.config_files import FieldError
from serving.contract.query_classes import DEFAULT_SHAPE, QUERY_SHAPES, QUERY_TYPES, check_names

Mode = Literal["hybrid", "fts", "vector", "fuzzy"]
MODES: tuple[Mode, ...] = get_args(Mode)
DEFAULT = "default"  # the key whose value applies to the classes not listed (where a kind admits it)


class Thresholds(RootModel[dict[str, float]]):
    """Thresholds by class name; `default`, when the kind admits it, for the classes not listed. A kind
    (a subclass) states its class names and its range; the one validator checks both."""

    model_config = ConfigDict(strict=True, frozen=True)

    names: ClassVar[tuple[str, ...]] = ()
    what: ClassVar[str] = "class"
    low: ClassVar[float] = -1.0
    high: ClassVar[float] = 1.0

    @model_validator(mode="after")
    def _known_and_in_range(self) -> Self:
        check_names(self.root, self.names, self.what)
        for name, value in self.root.items():
            if not self.low <= value <= self.high:
                raise FieldError((name,), f"a threshold must be in [{self.low}, {self.high}], not {value}")
        return self

    @classmethod
    def admitted(cls, rows: Mapping[str, float]) -> tuple[Self, dict[str, float]]:
        """The rows this kind admits (each checked by the validator on its own) and those it refuses."""
        kept: dict[str, float] = {}
        refused: dict[str, float] = {}
        for name, value in rows.items():
            try:
                cls.model_validate({name: value})
            except ValueError:
                refused[name] = value
            else:
                kept[name] = value
        return cls.model_validate(kept), refused

    def of(self, name: str) -> float | None:
        """The class's threshold, else `default`'s, else None."""
        return self.root.get(name, self.root.get(DEFAULT))

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]  # a mapping's keys, as RootModel documents
        return iter(self.root)

    def __getitem__(self, name: str) -> float:
        return self.root[name]

    def __len__(self) -> int:
        return len(self.root)

    def items(self) -> Iterator[tuple[str, float]]:
        return iter(self.root.items())


class ShapeThresholds(Thresholds):
    """By query shape, `default` for the shapes not listed; scores and cosines: [-1, 1]."""

    names = (DEFAULT_SHAPE, *QUERY_SHAPES)
    what = "query shape"


class ModeThresholds(Thresholds):
    """By search mode (hybrid, fts, vector, fuzzy): the scale of the top score a request is judged on."""

    names = MODES
    what = "mode"


class TypeThresholds(Thresholds):
    """By query type (`default`: the default plan), on the plans' hybrid scale [0, 1]."""

    names = QUERY_TYPES
    what = "query type"
    low = 0.0
