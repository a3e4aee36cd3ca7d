"""The one factory: every source spec (and user folder) becomes the same small set of definitions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import dagster as dg

from .assets.embeddings import build_embeddings_asset, embeddings_code_version
from .assets.folders import build_folder_asset
from .assets.ingested import build_ingested_assets, ingested_sensor
from .assets.keys import FRESHNESS, LOOKUP_SOURCES, REFRESH_OK, folder_key, source_key
from .assets.lookups import build_lookup_asset
from .assets.map_verifier import build_map_verifier_asset
from .assets.sentence_model import build_sentence_model_asset
from .assets.sources import build_source_asset
from .assets.upstream import build_upstream_asset
from .checks import build_embedding_checks, build_freshness_check, build_refresh_check, build_technique_check
from .chunking import ChunkConfig
from .folders import FolderSpec
from .sensors import build_folder_sensor, build_source_sensor
from .sources.registry import SourceSpec
from .training.promotion import SOURCES as TRAINING_SOURCES


@dataclass
class Graph:
    """Everything the factory built, ready for `Definitions`."""

    assets: list[dg.AssetsDefinition | dg.SourceAsset] = field(default_factory=list)
    checks: list[dg.AssetChecksDefinition] = field(default_factory=list)
    sensors: list[dg.SensorDefinition] = field(default_factory=list)
    freshness_checks: list[dg.AssetCheckKey] = field(default_factory=list)


def build_graph(
    specs: Mapping[str, SourceSpec],
    folders: Iterable[FolderSpec],
    *,
    model: str,
    chunking: ChunkConfig,
    training_steps: int | None = None,
) -> Graph:
    """upstream/<s> -> sources/<s> -> embeddings/<s> per source, the ATT&CK lookup, and per folder
    folders/<f> -> embeddings/<f>; with their checks and sensors. An embeddings asset's code version is
    the model and its source's chunker (a source may chunk its own way: registry `chunking`)."""
    graph = Graph()
    embed_code = embeddings_code_version(model, chunking.version)
    enabled = [spec for _, spec in sorted(specs.items()) if spec.enabled]
    for spec in enabled:
        graph.assets += [
            build_upstream_asset(spec),
            build_source_asset(spec),
            build_embeddings_asset(
                spec.name,
                source_key(spec.name),
                group=spec.category,
                code_version=embeddings_code_version(model, chunking.with_overrides(spec.chunking).version),
            ),
        ]
        graph.checks += [
            build_technique_check(spec.name),
            build_freshness_check(spec.name, spec.poll_interval),
            build_refresh_check(spec.name),
            *build_embedding_checks(spec.name),
        ]
        graph.sensors.append(build_source_sensor(spec))
        graph.freshness_checks += [
            dg.AssetCheckKey(source_key(spec.name), FRESHNESS),
            dg.AssetCheckKey(source_key(spec.name), REFRESH_OK),
        ]
    lookup_sources = [spec for spec in enabled if spec.name in LOOKUP_SOURCES]
    if lookup_sources:
        graph.assets.append(build_lookup_asset(lookup_sources))
    if training_steps and set(TRAINING_SOURCES) <= {s.name for s in enabled}:  # None or 0: no training
        graph.assets += [build_sentence_model_asset(training_steps), build_map_verifier_asset()]
    graph.assets += build_ingested_assets(chunker_version=chunking.version, embed_code=embed_code)  # `secrag ingest`
    graph.sensors.append(ingested_sensor)
    for folder in folders:
        graph.assets += [
            build_folder_asset(folder),
            build_embeddings_asset(folder.name, folder_key(folder.name), group="user_folders", code_version=embed_code),
        ]
        graph.checks += [
            build_technique_check(folder.name, folder_key(folder.name)),
            *build_embedding_checks(folder.name),
        ]
        graph.sensors.append(build_folder_sensor(folder))
    return graph
