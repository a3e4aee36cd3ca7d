"""Named jobs: one `refresh_<source>` per online source (its publish, its embeddings, and for ATT&CK
the technique lookup) and per user folder (its publish and embeddings), what an operator backfills with
`secrag backfill` or launches in the UI."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from .assets.keys import embeddings_key, folder_key
from .folders import FolderSpec
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


def folder_jobs(folders: Iterable[FolderSpec]) -> list[dg.UnresolvedAssetJobDefinition]:
    return [
        dg.define_asset_job(
            refresh_job_name(spec.name),
            selection=dg.AssetSelection.assets(folder_key(spec.name), embeddings_key(spec.name)),
            description=f"Refresh the folder {spec.name}: publish its files (run config `force` to accept a "
            "listing the shrink guard refused), then embed what changed.",
            tags={"secrag/source": spec.name},
        )
        for spec in folders
    ]
