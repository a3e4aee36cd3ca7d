"""Which telemetry-schema records describe the events a detection reads (serving/plans/telemetry.yaml): a
Sigma rule's `logsource` -> OSSEM data-dictionary events and ECS field sets, so that a query-writing
plan can put the schema a detection needs beside it."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator

from secrag.files.config_files import ConfigModel, load_model
from secrag.files.package_data import package_path
from secrag.telemetry_refs import LogsourceKey, schema_ids


def default_telemetry_file() -> Path:
    return package_path("serving.plans", "telemetry.yaml")


class LogsourceSchemas(ConfigModel):
    """One logsource pattern and the schema records that describe it."""

    logsource: dict[LogsourceKey, str] = Field(min_length=1)
    schemas: list[str] = Field(min_length=1)

    @field_validator("schemas")
    @classmethod
    def _schema_ids(cls, schemas: list[str]) -> list[str]:
        return schema_ids(schemas)


class TelemetryMap(ConfigModel):
    """Every logsource pattern, in file order."""

    mappings: list[LogsourceSchemas]

    def schemas_for(self, logsource: Mapping[str, object]) -> list[str]:
        """The schema doc ids of the most specific entries the logsource matches (none: empty)."""
        given = {k: str(v).strip().lower() for k, v in logsource.items() if v is not None}
        matching = [m for m in self.mappings if all(given.get(k) == v.lower() for k, v in m.logsource.items())]
        if not matching:
            return []
        most = max(len(m.logsource) for m in matching)
        out: list[str] = []
        for m in matching:
            if len(m.logsource) == most:
                out.extend(s for s in m.schemas if s not in out)
        return out


@lru_cache(maxsize=1)
def shipped_telemetry() -> TelemetryMap:
    """The shipped table, read once per process (create_app reads it first, so a bad file stops the start)."""
    return load_telemetry()


def load_telemetry(path: Path | None = None) -> TelemetryMap:
    """The mapping file (default: the one shipped), validated; errors name the file, line and field."""
    return load_model(path or default_telemetry_file(), TelemetryMap)
