"""Sentence embeddings from a registered local model (offline): what every encoder offers, and the
sentence-transformers (torch) encoder."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from secrag.errors import ConfigError
from secrag.models.registry import ModelInfo, model_info
from secrag.models.weights import check_pooling, declared_pooling, weights_dir
from secrag.settings import get_settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)


class TextModel(Protocol):
    """What encoding needs of a model (Embedder and secrag.models.onnx_model.OnnxEncoder both fit): chunks and
    queries each get the model's own prefix."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def load(self) -> None: ...

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...


class RegisteredModel:
    """An encoder of one registered model: its id, dimensions and prefixes come from the registry.

    `encode` takes texts as given; the pipeline and the API call `encode_documents` and `encode_queries`,
    which put the model's document or query prefix first.
    """

    info: ModelInfo

    @property
    def model_id(self) -> str:
        return self.info.model_id

    @property
    def dimensions(self) -> int:
        return self.info.dimensions

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of chunks (the pipeline's embedding input), one row per text."""
        return self.encode(self.info.documents(list(texts)))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of queries, one row per text."""
        return self.encode(self.info.queries(list(texts)))


class Embedder(RegisteredModel):
    """Loads the model once (lazily, thread-safe) with sentence-transformers and encodes float32 vectors."""

    def __init__(
        self, model_id: str, *, batch_size: int = 64, threads: int = 0, models_dir: Path | None = None
    ) -> None:
        self.info = model_info(model_id)
        if self.info.quantized_from:
            raise ConfigError(
                f"embedding model {model_id} is an int8 ONNX model; sentence-transformers (torch) cannot run it",
                hint=f"use the onnx encoder (SECRAG_QUERY_ENCODER=onnx), or the fp32 model {self.info.quantized_from}",
            )
        self.batch_size = batch_size
        self.threads = threads
        self.models_dir = models_dir
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    def _folder(self) -> Path:
        if self.models_dir is None:
            self.models_dir = get_settings().models_dir
        folder = weights_dir(self.info, self.models_dir)
        check_pooling(self.info, folder)
        if declared_pooling(folder) is None and self.info.pooling != "mean":
            raise ConfigError(
                f"model {self.model_id} uses {self.info.pooling} pooling but {folder} has no 1_Pooling/config.json; "
                "sentence-transformers would mean-pool it",
                hint="use the onnx encoder, which pools as the registry says",
            )
        return folder

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import torch
                from sentence_transformers import SentenceTransformer

                if self.threads:
                    torch.set_num_threads(self.threads)
                path = self._folder()
                log.info("loading embedding model %s from %s", self.model_id, path)
                model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
                model.max_seq_length = self.info.max_tokens
                getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                dims = getter()
                if dims != self.info.dimensions:
                    raise ConfigError(
                        f"model {self.model_id} produces {dims} dimensions, the registry says {self.info.dimensions}"
                    )
                self._model = model
            return self._model

    def load(self) -> None:
        self._load()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 vectors (unit length when the model normalises), one row per text as given."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=self.info.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        result: np.ndarray = vectors.astype(np.float32, copy=False)
        return result
