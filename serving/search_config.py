"""Source boosts and per-query-type score thresholds, read from a YAML file at startup."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml

from secrag.errors import ConfigError

MODES = ("hybrid", "fts", "vector", "fuzzy")


@dataclass(frozen=True)
class SearchConfig:
    """Boost per source name; threshold per mode and query type (`default` as the fallback)."""

    source_boosts: Mapping[str, float] = field(default_factory=dict)
    thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def boost(self, source: str) -> float:
        return self.source_boosts.get(source, 1.0)

    def threshold(self, mode: str, query_type: str) -> float:
        per_mode = self.thresholds.get(mode, {})
        return per_mode.get(query_type, per_mode.get("default", 0.0))


def _floats(raw: object, where: str) -> dict[str, float]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a mapping")
    try:
        return {str(k): float(v) for k, v in raw.items()}
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} values must be numbers") from exc


def load_search_config(path: Path) -> SearchConfig:
    """Parse the YAML file; a missing file means no boosts and no thresholds."""
    if not path.exists():
        return SearchConfig()
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path.name}: expected a mapping")
    unknown = set(raw) - {"source_boosts", "thresholds"}
    if unknown:
        raise ConfigError(f"{path.name}: unknown keys {', '.join(sorted(unknown))}")
    thresholds_raw = raw.get("thresholds") or {}
    if not isinstance(thresholds_raw, Mapping) or set(thresholds_raw) - set(MODES):
        raise ConfigError(f"{path.name}: thresholds must be keyed by mode ({', '.join(MODES)})")
    thresholds = {mode: MappingProxyType(_floats(v, f"thresholds.{mode}")) for mode, v in thresholds_raw.items()}
    return SearchConfig(
        source_boosts=MappingProxyType(_floats(raw.get("source_boosts"), "source_boosts")),
        thresholds=MappingProxyType(thresholds),
    )
