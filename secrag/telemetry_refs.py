"""What the API's plans and coverage call telemetry: a Sigma logsource's keys and the doc ids of the telemetry
schemas (OSSEM's data dictionaries and ECS), checked where their tables are read."""

from __future__ import annotations

from typing import Literal

from secrag.files.config_files import FieldError

LogsourceKey = Literal["product", "category", "service"]
LOGSOURCE_KEYS: tuple[LogsourceKey, ...] = ("product", "category", "service")
SCHEMA_SOURCES = ("ossem_dd", "ecs")


def schema_ids(ids: list[str]) -> list[str]:
    """The ids as given; a FieldError at the first that is not a doc id of a schema source."""
    for i, doc_id in enumerate(ids):
        if doc_id.split(":", 1)[0] not in SCHEMA_SOURCES:
            raise FieldError((i,), f"{doc_id!r} is not a doc id of {' or '.join(SCHEMA_SOURCES)}")
    return ids
