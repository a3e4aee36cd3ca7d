"""The source registry: one YAML file per source in `registry/`, loaded into frozen specs."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from secrag.errors import ConfigError
from secrag.files.package_data import package_path
from secrag.freshness import DEFAULT_POLL_SECONDS, POLL_FLOOR_SECONDS

from ..chunking import ChunkConfig
from .shape import ShapeBand, shape_from

TRACKING = ("commit", "release", "feed", "bundled")  # bundled: shipped with secrag (sources/bundled.py)
_DURATION = re.compile(r"^(\d+)\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PLAIN_JSON = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9._/-]{1,200}\.json$")


def parse_duration(value: object) -> int:
    """Seconds from `90`, `30m`, `6h` or `1d`."""
    if isinstance(value, int):
        return value
    match = _DURATION.match(str(value).strip())
    if not match:
        raise ConfigError(f"invalid duration {value!r}; use e.g. 30m, 6h, 1d")
    return int(match.group(1)) * _UNITS[match.group(2)]


@dataclass(frozen=True)
class SourceSpec:
    """What secrag needs to know to track, fetch and parse one online source."""

    name: str
    description: str
    repo: str  # git URL of the upstream repository ("" for pure feeds)
    branch: str
    tracking: str  # commit | release | feed
    paths: tuple[str, ...]
    parser: str
    parser_version: str
    license: str
    category: str
    exclude: tuple[str, ...] = ()
    github: str = ""  # owner/name, for the releases API
    feed_url: str = ""
    version_field: str = ""  # feed field holding the version; content hash when empty
    version_index: str = ""  # a release index in the repository (ATT&CK's index.json): sources/version_index.py
    web_url: str = ""  # template with {version} and {path}
    enabled: bool = True
    poll_interval: int = DEFAULT_POLL_SECONDS["commit"]  # seconds between probes (see pipeline/polling.py)
    max_file_bytes: int = 10 * 1024 * 1024
    options: Mapping[str, Any] = field(default_factory=dict)
    chunking: Mapping[str, Any] = field(default_factory=dict)  # this source's ChunkConfig overrides
    shape: ShapeBand | None = None  # the registry's shape band (registry/_defaults.yaml and `shape:`)

    def max_shrink(self, default: float) -> float:
        """The band of this source's record count: its stated one, else `default` (SECRAG_MAX_SHRINK)."""
        stated = self.shape.max_shrink if self.shape is not None else None
        return default if stated is None else stated

    def parser_module(self) -> ModuleType:
        return importlib.import_module(f"pipeline.sources.parsers.{self.parser}")


_REQUIRED = ("description", "branch", "tracking", "paths", "parser", "parser_version", "license", "category")


DEFAULTS = "_defaults"  # registry/_defaults.yaml: what every entry has unless it says otherwise (not a source)


def _spec_from(name: str, raw: Mapping[str, Any], origin: Path, defaults: Mapping[str, Any]) -> SourceSpec:
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise ConfigError(f"{origin}: missing {', '.join(missing)}")
    unknown = set(raw) - {f.name for f in SourceSpec.__dataclass_fields__.values()}
    if unknown:
        raise ConfigError(f"{origin}: unknown keys {', '.join(sorted(unknown))}")
    if raw["tracking"] not in TRACKING:
        raise ConfigError(f"{origin}: tracking must be one of {', '.join(TRACKING)}")
    index = raw.get("version_index", "")
    if index and (raw["tracking"] != "release" or not raw.get("github") or not _PLAIN_JSON.match(str(index))):
        raise ConfigError(f"{origin}: version_index must be a plain relative .json path of a release source on github")
    values = dict(raw)
    values["name"] = name
    values["paths"] = tuple(raw["paths"])
    values["exclude"] = tuple(raw.get("exclude", ()))
    values["parser_version"] = str(raw["parser_version"])
    values["poll_interval"] = parse_duration(raw.get("poll_interval", DEFAULT_POLL_SECONDS[raw["tracking"]]))
    if values["poll_interval"] < POLL_FLOOR_SECONDS:
        raise ConfigError(f"{origin}: poll_interval must be at least {POLL_FLOOR_SECONDS}s")
    values.setdefault("repo", "")
    values["options"] = dict(raw.get("options") or {})
    values["chunking"] = dict(raw.get("chunking") or {})
    values["shape"] = shape_from(raw.get("shape") or {}, defaults.get("shape") or {}, origin)
    try:
        ChunkConfig().with_overrides(values["chunking"])
    except ConfigError as exc:
        raise ConfigError(f"{origin}: {exc}") from exc
    return SourceSpec(**values)


def load_registry(directory: Path | None = None) -> dict[str, SourceSpec]:
    """Every source spec in the directory (default: the registry shipped in the package), keyed by name."""
    shipped = package_path("pipeline.sources", "registry")
    directory = directory if directory is not None else shipped
    own = directory / f"{DEFAULTS}.yaml"
    defaults = _mapping(own if own.is_file() else shipped / f"{DEFAULTS}.yaml")
    specs: dict[str, SourceSpec] = {}
    for path in sorted(directory.glob("*.yaml")):
        if path.stem != DEFAULTS:
            specs[path.stem] = _spec_from(path.stem, _mapping(path), path, defaults)
    return specs


def _mapping(path: Path) -> dict[str, Any]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping")
    return raw


@lru_cache(maxsize=1)
def default_registry() -> dict[str, SourceSpec]:
    """The registry shipped with secrag (cached; read on first use, never at import)."""
    return load_registry()
