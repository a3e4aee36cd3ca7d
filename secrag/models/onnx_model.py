"""An onnxruntime encoder of a registered embedding model (its ONNX file from secrag/models/onnx_export.py):
mean or CLS pooling and truncation as the registry says, float32 rows (unit length when the model
normalises), the same vectors as sentence-transformers to 1e-4 (fp32)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from secrag.errors import ConfigError
from secrag.models.embedder import RegisteredModel
from secrag.models.onnx_export import export_onnx
from secrag.models.registry import Pooling, model_info
from secrag.models.weights import check_pooling, weights_dir

log = logging.getLogger(__name__)

# Rows per model run: a batch of 256-token texts needs batch x heads x 256 x 256 floats of attention.
MAX_BATCH = 32


class OnnxEncoder(RegisteredModel):
    """Encodes texts with the ONNX export on onnxruntime, pooled as the registry says."""

    def __init__(self, model_id: str, cache_dir: Path, threads: int = 1, *, max_batch: int = MAX_BATCH) -> None:
        self.info = model_info(model_id)
        self.cache_dir = Path(cache_dir)
        self.threads = threads
        self.max_batch = max_batch
        self.path: Path | None = None
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._pad_id = 0
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Export if needed, then open the tokenizer and the onnxruntime session (once)."""
        with self._lock:
            if self._session is None:
                self._load()

    def _load(self) -> None:
        path = export_onnx(self.model_id, self.cache_dir)
        started = time.perf_counter()
        model_dir = weights_dir(self.info, self.cache_dir)
        check_pooling(self.info, model_dir)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            padding = tokenizer.padding or {}
            tokenizer.no_padding()  # the shipped tokenizer pads to 128: we pad each batch to its longest item
            tokenizer.enable_truncation(self.info.max_tokens)
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(
                f"cannot load the ONNX model {path}: {type(exc).__name__}: {exc}",
                hint="delete the file to export it again",
            ) from exc
        self._inputs = tuple(i.name for i in session.get_inputs())
        if not {"input_ids", "attention_mask"} <= set(self._inputs):
            raise ConfigError(f"ONNX model {path} lacks input_ids/attention_mask inputs: {self._inputs}")
        self._pad_id = int(padding.get("pad_id", 0))
        self._tokenizer = tokenizer
        self._session = session
        self.path = path
        dims = self._encode(["dimension check"]).shape[1]
        if dims != self.dimensions:
            self._session = None
            raise ConfigError(f"model {self.model_id} produces {dims} dimensions, the registry says {self.dimensions}")
        log.info(
            "loaded ONNX model %s from %s in %.2f s (%d threads)",
            self.model_id,
            path,
            time.perf_counter() - started,
            self.threads,
        )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 vectors, one row per text as given (a batch is padded to its longest item)."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if self._session is None:
            self.load()
        return self._encode(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of queries, one row per text, each text run alone: an int8 model quantises a run's activations
        with one scale for the whole batch, so a query's vector would depend on the texts beside it (cosine 0.993
        to itself alone), and a search on the concurrent searches batched with it. Short texts cost less alone
        (no padding to the longest)."""
        queries = self.info.queries(list(texts))
        if not queries:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.vstack([self.encode([query]) for query in queries])

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        encodings = [self._tokenizer.encode(str(t)) for t in texts]
        out = np.empty((len(encodings), self.dimensions), dtype=np.float32)
        for rows in _length_groups([len(e.ids) for e in encodings], self.max_batch):
            out[rows] = self._run([encodings[i] for i in rows])
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = 1
            types[row, :n] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {name: feeds[name] for name in self._inputs})[0]
        return pool(hidden, mask, self.info.pooling, normalize=self.info.normalize)


def pool(hidden: np.ndarray, mask: np.ndarray, pooling: Pooling, *, normalize: bool) -> np.ndarray:
    """One float32 row per text from its token vectors: the mean over its tokens (padding left out) or the
    first token's ([CLS]); scaled to unit length when `normalize`."""
    if pooling == "cls":
        pooled = hidden[:, 0, :]
    else:
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    if not normalize:
        rows: np.ndarray = pooled.astype(np.float32, copy=False)
        return rows
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    vectors: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32, copy=False)
    return vectors


def _length_groups(lengths: list[int], max_size: int = 1 << 30, waste: float = 0.3, slack: int = 32) -> list[list[int]]:
    """Row indices grouped by similar length, so padding a group to its longest wastes at most ~`waste`,
    at most `max_size` rows a group."""
    groups: list[list[int]] = []
    total = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        n = lengths[i]
        if groups and len(groups[-1]) < max_size and (len(groups[-1]) + 1) * n <= (1 + waste) * (total + n) + slack:
            groups[-1].append(i)
            total += n
        else:
            groups.append([i])
            total = n
    return groups
