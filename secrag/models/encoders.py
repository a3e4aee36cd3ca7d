"""The encoder documents are embedded with: onnxruntime for every model, the same runtime the API
encodes queries with.

Measured on 2,000 chunks of the snapshot (AMD EPYC, AVX2, 2 threads; the closing note of the
speed issue): sentence-transformers on torch at batch 64 embedded 22.0 chunks/s,
onnxruntime fp32 27.9 (1.27x, vectors equal to 1e-4), onnxruntime int8 40.2 (1.83x). The ONNX export
is made once per model (torch is needed only for that) and kept in the models folder.
"""

from __future__ import annotations

from pathlib import Path

from secrag.models.embedder import TextModel
from secrag.models.onnx_model import MAX_BATCH, OnnxEncoder
from secrag.models.registry import model_info


def document_encoder(model_id: str, *, batch_size: int, threads: int, cache_dir: Path) -> TextModel:
    """The encoder the pipeline embeds chunks with (`threads` 0: onnxruntime's default, one per core)."""
    model_info(model_id)  # ConfigError naming the known models
    return OnnxEncoder(model_id, cache_dir, threads=threads, max_batch=min(batch_size, MAX_BATCH))
