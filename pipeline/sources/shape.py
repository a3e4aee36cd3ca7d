"""A source's shape band: how far a refresh's record count, and each kind of record, may shrink from the
last good version before the refresh is refused (an upstream whose layout moved parses to far fewer)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from secrag.errors import ConfigError

from .records import Record

FOLDER = "folder"  # a record's kind is the first segment of its upstream path (Sigma's rule trees)
NONE = "none"  # the records have no kind: only their count is checked
METADATA = "metadata:"  # a record's kind is this metadata key's text (ATT&CK's technique, group, ...)
_KEYS = {"kind", "max_shrink", "kind_max_shrink", "min_kind_records", "kinds"}


@dataclass(frozen=True)
class ShapeBand:
    """What a refresh of one source must keep of the served version (registry `shape:`)."""

    kind: str  # metadata:<key>, folder or none
    max_shrink: float | None  # the source's record count band; None: SECRAG_MAX_SHRINK
    kind_max_shrink: float  # each kind's band, unless `kinds` names it
    min_kind_records: int  # a kind that held fewer served records is left to the count band
    kinds: Mapping[str, float] = field(default_factory=dict)

    @property
    def metadata_key(self) -> str | None:
        return self.kind.removeprefix(METADATA) if self.kind.startswith(METADATA) else None

    def kind_of(self, record: Record) -> str | None:
        if self.kind == FOLDER:
            return record.path.split("/", 1)[0] if "/" in record.path else None
        key = self.metadata_key
        value = record.metadata.get(key) if key else None
        return value if isinstance(value, str) and value else None

    def counts(self, records: Iterable[Record]) -> dict[str, int]:
        """Records per kind (records without one are not counted)."""
        return dict(Counter(k for r in records if (k := self.kind_of(r)) is not None))

    def band(self, kind: str) -> float:
        return self.kinds.get(kind, self.kind_max_shrink)

    def refusals(self, served: Mapping[str, int], counts: Mapping[str, int]) -> list[str]:
        """Why each kind of the served version shrank past its band, in kind order (none: it may publish)."""
        reasons = []
        for kind, before in sorted(served.items()):
            now, band = counts.get(kind, 0), self.band(kind)
            if before >= self.min_kind_records and now < before * (1 - band):
                reasons.append(f"kind {kind!r} ({self.kind}) shrank from {before} to {now} records (band {band:.0%})")
        return reasons


def _share(value: Any, where: str) -> float:  # noqa: ANN401 - a YAML value
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(f"{where} must be a share between 0 and 1, not {value!r}")
    return float(value)


def shape_from(raw: Any, base: Mapping[str, Any], origin: object) -> ShapeBand:  # noqa: ANN401 - a YAML value
    """The band of `raw` (a registry entry's `shape:`) over `base` (the registry's defaults)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{origin}: shape must be a mapping")
    unknown = set(raw) - _KEYS
    if unknown:
        raise ConfigError(f"{origin}: unknown shape keys {', '.join(sorted(map(str, unknown)))}")
    values = {**base, **raw}
    kind = str(values.get("kind", NONE))
    if kind not in (FOLDER, NONE) and not (kind.startswith(METADATA) and kind != METADATA):
        raise ConfigError(f"{origin}: shape kind must be metadata:<key>, {FOLDER} or {NONE}, not {kind!r}")
    minimum = values.get("min_kind_records", 0)
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
        raise ConfigError(f"{origin}: shape min_kind_records must be a whole number of at least 1")
    kinds = values.get("kinds") or {}
    if not isinstance(kinds, Mapping):
        raise ConfigError(f"{origin}: shape kinds must map a kind to its band")
    total = values.get("max_shrink")
    return ShapeBand(
        kind=kind,
        max_shrink=None if total is None else _share(total, f"{origin}: shape max_shrink"),
        kind_max_shrink=_share(values.get("kind_max_shrink"), f"{origin}: shape kind_max_shrink"),
        min_kind_records=minimum,
        kinds={str(k): _share(v, f"{origin}: shape kinds.{k}") for k, v in kinds.items()},
    )
