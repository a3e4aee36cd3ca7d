"""When an upstream change went through each stage, as run metadata: first seen by a probe, run queued, run
started, published (on `sources/<source>`) and embedded (on `embeddings/<source>`); bench/freshness.py reads
them, and the UI shows them on each materialization."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import dagster as dg
import psycopg

from secrag.db.queries import Queries


def _at(moment: datetime | float | None) -> float | None:
    if moment is None:
        return None
    return moment.timestamp() if isinstance(moment, datetime) else float(moment)


def run_times(context: dg.AssetExecutionContext) -> dict[str, float | None]:
    """When this run was queued and started (epoch seconds)."""
    record = context.instance.get_run_record_by_id(context.run.run_id)
    if record is None:
        return {"run_queued": None, "run_started": None}
    return {"run_queued": _at(record.create_timestamp), "run_started": _at(record.start_time)}


def stage_metadata(stamps: dict[str, float | None], last: str) -> dict[str, Any]:
    """Each stage's time (`<stage>_at`) and the seconds from one stage to the next, up to `last` (now)."""
    stamps = {**stamps, last: datetime.now(UTC).timestamp()}
    meta: dict[str, Any] = {f"{k}_at": dg.MetadataValue.timestamp(v) for k, v in stamps.items() if v is not None}
    known = [(k, v) for k, v in stamps.items() if v is not None]
    for (a, t0), (b, t1) in zip(known, known[1:], strict=False):
        meta[f"seconds_{a}_to_{b}"] = round(t1 - t0, 3)
    return meta


def published_stages(
    context: dg.AssetExecutionContext, conn: psycopg.Connection, q: Queries, source: str, version: str
) -> dict[str, Any]:
    """The stages of a publish of `version`: first seen upstream (when the probes saw it), the run, now."""
    row = conn.execute(q.version_seen_since, {"source": source, "version": version}).fetchone()
    return stage_metadata({"seen": _at(row[0]) if row else None, **run_times(context)}, "published")
