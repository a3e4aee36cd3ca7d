"""Typed Dagster resources: the store (database), the upstream (online or snapshot) and the embedder.

Every field defaults to None = "take it from secrag settings at run time", so building the
resources in `definitions.py` reads no configuration; tests pass explicit values.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
from pydantic import PrivateAttr

from secrag.db import database
from secrag.models.embedder import TextModel
from secrag.models.encoders import document_encoder
from secrag.models.registry import model_info
from secrag.settings import DEFAULT_MODEL, Settings, get_settings

from .chunking import ChunkConfig
from .sources.configure import upstream_for
from .sources.interface import Upstream
from .sources.online import OnlineUpstream
from .sources.upstream import UpstreamConfig
from .store import Store

# Dagster gives a sensor evaluation 60 s; a probe must leave room for the rest of the tick.
MAX_PROBE_SECONDS = 40.0


class StoreResource(dg.ConfigurableResource):
    """The secrag database and the limits every publish applies."""

    database_url: str | None = None  # None: DATABASE_URL, else the embedded server's secrag database
    sql_dir: str | None = None
    connect_timeout: int = 10
    max_shrink: float | None = None
    folder_max_shrink: float | None = None
    max_error_share: float | None = None
    chunk_target_chars: int | None = None
    chunk_overlap_chars: int | None = None
    chunk_across_paragraphs: bool | None = None
    work_dir: str | None = None  # checkouts of upstream versions (deleted after each publish)

    _url: str | None = PrivateAttr(default=None)

    def _settings(self) -> Settings:
        return get_settings()

    def url(self) -> str:
        if self._url is None:
            self._url = self.database_url or database.database_url(self._settings())
        return self._url

    @contextmanager
    def connect(self) -> Iterator[psycopg.Connection]:
        """An autocommit connection (publish and embedding open their own transactions)."""
        with database.connect(self.url(), timeout=self.connect_timeout, autocommit=True) as conn:
            yield conn

    def sql_path(self) -> Path:
        return Path(self.sql_dir) if self.sql_dir else self._settings().sql_dir

    def store(self) -> Store:
        return Store(self.sql_path())

    def shrink_limit(self) -> float:
        return self.max_shrink if self.max_shrink is not None else self._settings().max_shrink

    def folder_shrink_limit(self) -> float:
        return self.folder_max_shrink if self.folder_max_shrink is not None else self._settings().folder_max_shrink

    def error_share_limit(self) -> float:
        return self.max_error_share if self.max_error_share is not None else self._settings().max_error_share

    def history_days(self) -> int:
        return self._settings().change_history_days

    def chunking(self) -> ChunkConfig:
        s = self._settings()
        overrides = {
            "target": self.chunk_target_chars,
            "overlap": self.chunk_overlap_chars,
            "across": self.chunk_across_paragraphs,
        }
        return ChunkConfig.from_settings(s).with_overrides({k: v for k, v in overrides.items() if v is not None})

    def work_path(self) -> Path:
        path = Path(self.work_dir) if self.work_dir else self._settings().data_dir / "work"
        path.mkdir(parents=True, exist_ok=True)
        return path.resolve()


@lru_cache(maxsize=4)
def _upstream_from_settings(settings_json: str) -> Upstream:
    # Building mirrors verifies every snapshot folder; do it once per process, not once per tick.
    return upstream_for(Settings.model_validate_json(settings_json))


class UpstreamResource(dg.ConfigurableResource):
    """Where probes and fetches go: the real upstreams, or local mirrors of a snapshot."""

    mirror: str | None = None  # snapshot folder; None: SECRAG_UPSTREAM_MIRROR (unset = real upstreams)
    repo_overrides: dict[str, str] = {}  # source -> git URL, e.g. of an already built mirror (benches, tests)
    feed_overrides: dict[str, str] = {}
    github_api_base: str | None = None
    probe_timeout: float | None = None  # seconds per probe, capped at MAX_PROBE_SECONDS
    fetch_timeout: float | None = None  # seconds per fetch

    @classmethod
    def for_config(cls, cfg: UpstreamConfig) -> UpstreamResource:
        """A resource reading the URLs of this configuration (e.g. a mirror built by a bench)."""
        return cls(
            repo_overrides=dict(cfg.repo_overrides),
            feed_overrides=dict(cfg.feed_overrides),
            github_api_base=cfg.github_api_base,
            probe_timeout=cfg.probe_timeout,
            fetch_timeout=cfg.fetch_timeout,
        )

    def upstream(self) -> Upstream:
        settings = get_settings()
        overridden = bool(self.repo_overrides or self.feed_overrides)
        if overridden:
            settings = settings.model_copy(update={"upstream_mirror": None})
        elif self.mirror:
            settings = settings.model_copy(update={"upstream_mirror": Path(self.mirror)})
        upstream = _upstream_from_settings(settings.model_dump_json())
        cfg = upstream.config
        if overridden:
            cfg = cfg.with_mirror(self.repo_overrides, self.feed_overrides, self.github_api_base or cfg.github_api_base)
        updates: dict[str, Any] = {"probe_timeout": min(self.probe_timeout or cfg.probe_timeout, MAX_PROBE_SECONDS)}
        if self.fetch_timeout:
            updates["fetch_timeout"] = self.fetch_timeout
        cfg = replace(cfg, **updates)
        return OnlineUpstream(cfg) if overridden else upstream.with_config(cfg)

    def config(self) -> UpstreamConfig:
        return self.upstream().config


@lru_cache(maxsize=2)
def _embedder(model: str, batch_size: int, threads: int, models_dir: Path) -> TextModel:
    # One model load per process: runs and tests in the same process share it.
    return document_encoder(model, batch_size=batch_size, threads=threads, cache_dir=models_dir)


class EmbedderResource(dg.ConfigurableResource):
    """The embedding model (from the model registry), its batch size and onnxruntime threads (its ONNX export
    is kept in the data directory's models folder)."""

    model: str = DEFAULT_MODEL
    batch_size: int = 64  # texts per forward pass
    threads: int = 0  # onnxruntime intra-op threads; 0 = one per core
    write_batch: int = 256  # chunks per committed COPY of vectors

    def embedder(self) -> TextModel:
        model_info(self.model)  # ConfigError naming the known models
        return _embedder(self.model, self.batch_size, self.threads, get_settings().models_dir)

    def for_model(self, model_id: str) -> TextModel:
        """Another registered model's encoder with this one's batch size and threads (the sentence model)."""
        model_info(model_id)
        return _embedder(model_id, self.batch_size, self.threads, get_settings().models_dir)

    def dimensions(self) -> int:
        return model_info(self.model).dimensions
