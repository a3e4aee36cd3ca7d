"""The Dagster code location of secrag: the only place resources are built.

`defs` is a `@definitions` function, so importing this module reads no settings; Dagster calls it
when it loads the code location (`dagster dev -w workspace.yaml`, `-m pipeline.definitions`).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import dagster as dg

from secrag.models.registry import model_info
from secrag.settings import REPO_ROOT, Settings, get_settings

from .assets.groups import groups_table
from .automation import automation_sensor
from .chunking import ChunkConfig
from .factory import build_graph
from .folders import FolderSpec, load_folders
from .jobs import folder_jobs, refresh_jobs
from .polling import with_poll_intervals
from .resources import EmbedderResource, StoreResource, UpstreamResource
from .schedules import build_freshness_schedule
from .sources.registry import SourceSpec, default_registry

log = logging.getLogger(__name__)


def folders_file(settings: Settings) -> Path | None:
    """SECRAG_FOLDERS_FILE, else `folders.yaml` in the repository root when present."""
    if settings.folders_file is not None:
        return settings.folders_file.expanduser().resolve()
    default = REPO_ROOT / "folders.yaml"
    return default if default.is_file() else None


def default_resources(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    """Store, upstream and embedder; unset fields resolve from settings when a run uses them."""
    return {
        "store": StoreResource(
            chunk_target_chars=settings.chunk_target_chars,
            chunk_overlap_chars=settings.chunk_overlap_chars,
            chunk_across_paragraphs=settings.chunk_across_paragraphs,
        ),
        "upstream": UpstreamResource(),
        "embedder": EmbedderResource(
            model=settings.embedding_model,
            batch_size=settings.embedding_batch_size,
            threads=settings.embedding_threads,
        ),
    }


def build_definitions(
    settings: Settings,
    specs: Mapping[str, SourceSpec],
    folders: Iterable[FolderSpec],
    resources: Mapping[str, object] | None = None,
) -> dg.Definitions:
    """The whole graph for these sources and folders (tests pass a subset and their own resources)."""
    model_info(settings.embedding_model)  # an unknown model fails the load, naming the known ones
    folders = list(folders)
    specs = with_poll_intervals(specs, settings.poll_interval)
    graph = build_graph(
        specs,
        folders,
        model=settings.embedding_model,
        chunking=ChunkConfig.from_settings(settings),
        training_steps=settings.sentence_training_steps if settings.sentence_training else None,
    )
    schedules = [build_freshness_schedule(graph.freshness_checks)] if graph.freshness_checks else []
    return dg.Definitions(
        assets=graph.assets,
        asset_checks=graph.checks,
        sensors=[*graph.sensors, automation_sensor()],
        jobs=[*refresh_jobs(specs.values()), *folder_jobs(folders)],
        schedules=schedules,
        resources=dict(resources or default_resources(settings)),
        executor=dg.in_process_executor,
        metadata={"asset_groups": dg.MetadataValue.md(groups_table(_group_names(graph.assets)))},
    )


def _group_names(assets: Iterable[dg.AssetsDefinition | dg.SourceAsset]) -> set[str]:
    specs = (spec for a in assets for spec in (a.specs if isinstance(a, dg.AssetsDefinition) else [a]))
    return {spec.group_name or "default" for spec in specs}  # Dagster's name for a group not given


@dg.definitions
def defs() -> dg.Definitions:
    # The beta warnings of observable source assets would repeat on every load.
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    settings = get_settings()
    specs = default_registry()
    folders = load_folders(folders_file(settings), reserved=frozenset(specs))
    for refused in (f for f in folders if f.error):  # its runs fail with the same text
        log.warning("folder refused", extra={"folder": refused.name, "error": refused.error})
    return build_definitions(settings, specs, folders)
