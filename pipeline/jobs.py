"""Named jobs: one `refresh_<source>` per online source (its publish, its embeddings, and for ATT&CK
the technique lookup), what an operator backfills with `secrag backfill` or launches in the UI."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from .sensors import source_targets
from .sources.registry import SourceSpec


def refresh_job_name(source: str) -> str:
    return f"refresh_{source}"


def refresh_jobs(specs: Iterable[SourceSpec]) -> list[dg.UnresolvedAssetJobDefinition]:
    return [
        dg.define_asset_job(
            refresh_job_name(spec.name),
            selection=dg.AssetSelection.assets(*source_targets(spec.name)),
            description=f"Refresh {spec.name}: publish its upstream version (run config `pin` for an "
            "older one, `force` to accept a refused one), then embed what changed.",
            tags={"secrag/source": spec.name},
        )
        for spec in specs
        if spec.enabled
    ]
