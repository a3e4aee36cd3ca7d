"""Document embedding throughput per encoder on the same sample of a built store's chunks.

    python bench/doc_encoders.py --database-url postgresql://...secrag_bench... [--sample 2000]

Encodes the sample (batches of 256 texts, as the pipeline hands them over) with sentence-transformers
on torch at batch 64 (the pipeline's encoder before onnxruntime), onnxruntime fp32 and onnxruntime
int8, after a warm-up batch each, and prints chunks per second. Name the CPU with the figures.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import time

from pipeline.indexing import embedding_input
from secrag.cpu import read_cpuinfo
from secrag.db import database
from secrag.models.embedder import Embedder, TextModel
from secrag.models.onnx_model import OnnxEncoder
from secrag.settings import Settings


def cpu_line() -> str:
    """`CPU: <model>, <n> cores (<the SIMD flags the encoders use>)` for the figures' heading."""
    cpu, cores = read_cpuinfo(), os.cpu_count() or 1
    if cpu is None:
        return f"CPU: unknown, {cores} cores"
    flags = ", ".join(f for f in ("avx2", "avx512f", "avx512_vnni") if f in cpu.flags)
    return f"CPU: {cpu.model}, {cores} cores ({flags})"


def chunk_sample(url: str, size: int) -> list[str]:
    """`size` distinct chunks of the store, as the pipeline hands them to the encoder (seeded)."""
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT ON (content_hash) title, enriched_text FROM chunks ORDER BY content_hash"
        ).fetchall()
    texts = [embedding_input(t, e) for t, e in rows]
    return random.Random(7).sample(texts, min(size, len(texts)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--sample", type=int, default=2000)
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    print(cpu_line())
    sample = chunk_sample(args.database_url, args.sample)
    models = Settings().models_dir
    encoders: dict[str, TextModel] = {
        "torch fp32 (batch 64)": Embedder("all-MiniLM-L6-v2", batch_size=64),
        "onnxruntime fp32 (batch 32)": OnnxEncoder("all-MiniLM-L6-v2", models, threads=0),
        "onnxruntime int8 (batch 32)": OnnxEncoder("all-MiniLM-L6-v2-int8", models, threads=0),
    }
    base = None
    for name, encoder in encoders.items():
        encoder.load()
        encoder.encode_documents(sample[:64])
        started = time.monotonic()
        for i in range(0, len(sample), 256):
            encoder.encode_documents(sample[i : i + 256])
        rate = len(sample) / (time.monotonic() - started)
        base = base or rate
        print(f"{name:30} {rate:6.1f} chunks/s  {rate / base:4.2f}x", flush=True)


if __name__ == "__main__":
    main()
