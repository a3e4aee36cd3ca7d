"""Which encoder runs a model for documents: onnxruntime for an int8 model, sentence-transformers else."""

from __future__ import annotations

from pathlib import Path

from .embedder import Embedder, TextModel, model_info
from .onnx_model import MAX_BATCH, OnnxEncoder


def document_encoder(model_id: str, *, batch_size: int, threads: int, cache_dir: Path) -> TextModel:
    """The encoder the pipeline embeds chunks with (`threads` 0: the library's default)."""
    if model_info(model_id).quantized_from:
        return OnnxEncoder(model_id, cache_dir, threads=threads or 0, max_batch=min(batch_size, MAX_BATCH))
    return Embedder(model_id, batch_size=batch_size, threads=threads)
