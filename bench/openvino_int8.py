"""One measurement of OpenVINO against onnxruntime on the same ONNX files (fp32 and int8 exports of
secrag/models/onnx_export.py), the same tokenizer, pooling and texts: single queries and document batches.

    pip install openvino            # bench only; secrag does not depend on it
    python bench/openvino_int8.py --database-url postgresql://...secrag_bench... [--sample 1000]

Prints ms per query (one thread, 200 distinct dev-set queries, median of 3 passes), chunks per second
(batches of 32 of a random sample of the store's chunks, all cores) and the largest cosine distance
between the two runtimes' vectors. Name the CPU with the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.indexing import embedding_input
from secrag.cpu import read_cpuinfo
from secrag.db import database
from secrag.models.onnx_model import OnnxEncoder
from secrag.settings import Settings

DEV = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev_queries.jsonl"


class OpenVinoSession:
    """onnxruntime's `run(None, feeds)` over an OpenVINO compiled model of the same ONNX file."""

    def __init__(self, path: Path, threads: int) -> None:
        import openvino as ov

        core = ov.Core()
        config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY" if threads == 1 else "THROUGHPUT"}
        self.model = core.compile_model(str(path), "CPU", config)
        self.names = [i.get_any_name() for i in self.model.inputs]

    def run(self, _outputs: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:  # noqa: ANN401
        result = self.model({name: feeds[name] for name in self.names})
        return [result[self.model.outputs[0]]]


def encoders(model: str, cache_dir: Path, threads: int) -> dict[str, OnnxEncoder]:
    ort_encoder = OnnxEncoder(model, cache_dir, threads=threads)
    ort_encoder.load()
    ov_encoder = OnnxEncoder(model, cache_dir, threads=threads)
    ov_encoder.load()
    assert ov_encoder.path is not None
    ov_encoder._session = OpenVinoSession(ov_encoder.path, threads)  # noqa: SLF001 - the same tokenizer and pooling
    return {"onnxruntime": ort_encoder, "openvino": ov_encoder}


def per_query_ms(encoder: OnnxEncoder, queries: list[str]) -> float:
    passes = []
    for _ in range(3):
        started = time.perf_counter()
        for q in queries:
            encoder.encode_queries([q])
        passes.append((time.perf_counter() - started) * 1000 / len(queries))
    return statistics.median(passes)


def chunks_per_second(encoder: OnnxEncoder, texts: list[str]) -> float:
    encoder.encode_documents(texts[:32])
    started = time.perf_counter()
    for i in range(0, len(texts), 32):
        encoder.encode_documents(texts[i : i + 32])
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--queries", type=Path, default=DEV)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cpu = read_cpuinfo()
    if cpu is not None:
        flags = ("avx2", "avx512f", "avx512_vnni", "amx_int8")
        print(f"CPU: {cpu.model} ({', '.join(f for f in flags if f in cpu.flags)})")
    queries = sorted({json.loads(line)["query"] for line in args.queries.read_text().splitlines() if line})[:200]
    with database.connect(args.database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT ON (content_hash) title, enriched_text FROM chunks ORDER BY content_hash"
        ).fetchall()
    texts = random.Random(7).sample([embedding_input(t, e) for t, e in rows], min(args.sample, len(rows)))
    cache_dir = Settings().models_dir
    cores = os.cpu_count() or 1
    print(f"{'model':24} {'runtime':12} {'ms/query (1 thread)':>20} {'chunks/s (batch 32)':>20} {'max cos dist':>13}")
    for model in ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8"):
        single, batch = encoders(model, cache_dir, 1), encoders(model, cache_dir, cores)
        reference = batch["onnxruntime"].encode_documents(texts[:64])
        for runtime in ("onnxruntime", "openvino"):
            distance = float(1 - (batch[runtime].encode_documents(texts[:64]) * reference).sum(axis=1).min())
            ms = per_query_ms(single[runtime], queries)
            rate = chunks_per_second(batch[runtime], texts)
            print(f"{model:24} {runtime:12} {ms:20.2f} {rate:20.1f} {distance:13.5f}")


if __name__ == "__main__":
    main()
