"""Fixtures for the Dagster graph tests (a pytest plugin): a small real-data mirror, a built store, a harness."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
import pytest
from psycopg import sql

from pipeline.definitions import build_definitions
from pipeline.folders import FolderSpec
from pipeline.resources import EmbedderResource, StoreResource, UpstreamResource
from pipeline.sources.mirror import Mirror, build_mirror
from pipeline.sources.registry import SourceSpec, default_registry
from pipeline.sources.upstream import UpstreamConfig
from secrag.db import database
from secrag.settings import get_settings

from .small_snapshot import build_small_snapshot

SOURCES = ("hijacklibs", "mitre_attack", "mitre_car")
warnings.filterwarnings("ignore", category=dg.BetaWarning)


@pytest.fixture(scope="session")
def small_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_small_snapshot(tmp_path_factory.mktemp("snapshot"))


@pytest.fixture(scope="session")
def small_specs() -> Mapping[str, SourceSpec]:
    return {name: spec for name, spec in default_registry().items() if name in SOURCES}


def make_mirror(snapshot: Path, target: Path, specs: Mapping[str, SourceSpec]) -> Mirror:
    return build_mirror(snapshot, target, specs=specs, sources=sorted(specs))


@pytest.fixture
def mirror(small_snapshot: Path, small_specs: Mapping[str, SourceSpec], tmp_path: Path) -> Mirror:
    """A fresh mirror per test (commits are deterministic: same heads as every other build)."""
    return make_mirror(small_snapshot, tmp_path / "mirror", small_specs)


@dataclass
class Harness:
    """One graph over the small sources, its resources, a Dagster instance and the store URL."""

    url: str
    mirror: Mirror
    defs: dg.Definitions
    resources: dict[str, Any]
    instance: dg.DagsterInstance

    def materialize(
        self,
        selection: str,
        run_config: Mapping[str, Any] | None = None,
        raise_on_error: bool = True,
        tags: Mapping[str, str] | None = None,
    ) -> dg.ExecuteInProcessResult:
        job = self.defs.resolve_implicit_global_asset_job_def().get_subset(
            asset_selection=dg.AssetSelection.from_string(selection).resolve(self.defs.resolve_asset_graph())
        )
        return job.execute_in_process(
            instance=self.instance,
            run_config=run_config or {},
            raise_on_error=raise_on_error,
            tags=dict(tags or {}),
        )

    def build_all(self) -> dg.ExecuteInProcessResult:
        return self.defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=self.instance)

    def connect(self) -> psycopg.Connection:
        return database.connect(self.url, autocommit=True)


def harness(
    url: str,
    mirror: Mirror,
    work: Path,
    specs: Mapping[str, SourceSpec],
    folders: list[FolderSpec] | None = None,
) -> Harness:
    cfg = UpstreamConfig(probe_timeout=10.0, fetch_timeout=60.0).with_mirror(
        mirror.repos, mirror.feeds, mirror.api_base
    )
    resources = {
        "store": StoreResource(database_url=url, work_dir=str(work)),
        "upstream": UpstreamResource.for_config(cfg),
        "embedder": EmbedderResource(),
    }
    defs = build_definitions(get_settings(), specs, folders or [], resources=resources)
    return Harness(url, mirror, defs, resources, dg.DagsterInstance.ephemeral())


def _admin(server_url: str) -> psycopg.Connection:
    return database.connect(database.with_database(server_url, "postgres"), autocommit=True)


def clone(server_url: str, template: str) -> str:
    name = f"secrag_dg_{uuid.uuid4().hex[:10]}"
    with _admin(server_url) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
    return name


def drop(server_url: str, name: str) -> None:
    with _admin(server_url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def built_store(
    pg_server_url: str,
    template_db: str,
    small_snapshot: Path,
    small_specs: Mapping[str, SourceSpec],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, dg.ExecuteInProcessResult]]:
    """A database holding the whole small graph, built once through Dagster: (database name, result)."""
    name = clone(pg_server_url, template_db)
    work = tmp_path_factory.mktemp("built")
    h = harness(
        database.with_database(pg_server_url, name),
        make_mirror(small_snapshot, work / "mirror", small_specs),
        work / "work",
        small_specs,
    )
    result = h.build_all()
    yield name, result
    drop(pg_server_url, name)


@pytest.fixture
def built(
    pg_server_url: str,
    built_store: tuple[str, dg.ExecuteInProcessResult],
    mirror: Mirror,
    tmp_path: Path,
    small_specs: Mapping[str, SourceSpec],
) -> Iterator[Harness]:
    """A harness over a private copy of the built store, with a fresh mirror and Dagster instance."""
    name = clone(pg_server_url, built_store[0])
    yield harness(database.with_database(pg_server_url, name), mirror, tmp_path / "work", small_specs)
    drop(pg_server_url, name)
