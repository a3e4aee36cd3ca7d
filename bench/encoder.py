"""Query encoding cost: torch (sentence-transformers) vs ONNX (onnxruntime), threads 1 and 2, batch 1 and 4.

Encodes 100 short and 100 long distinct queries (from the eval set) and prints ms per query (median of
--repeats passes), the largest difference between the two backends' vectors, and the serving QueryEncoder
(ONNX, micro-batching, cache) under concurrent clients.

    python bench/encoder.py [--queries /work/shared/eval/dev_queries.jsonl] [--cache-dir .secrag/models]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from secrag.models.embedder import Embedder
from secrag.models.onnx_model import OnnxEncoder
from secrag.settings import get_settings
from serving.search.encoder import QueryEncoder

MODEL = "all-MiniLM-L6-v2"
DEFAULT_QUERIES = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev_queries.jsonl"


def load_sets(path: Path, n: int = 100) -> dict[str, list[str]]:
    """`short`: the n shortest distinct queries; `long`: n distinct texts of three consecutive long queries."""
    queries = sorted(
        {json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines() if line},
        key=lambda q: (len(q), q),
    )
    longest = queries[-n:]
    long = [" ".join(longest[(i + j) % len(longest)] for j in range(3)) for i in range(len(longest))]
    return {"short": queries[:n], "long": long}


def ms_per_query(encode: Callable[[Sequence[str]], np.ndarray], texts: list[str], batch: int, repeats: int) -> float:
    encode(texts[:batch])  # warm-up
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        for i in range(0, len(texts), batch):
            encode(texts[i : i + batch])
        runs.append((time.perf_counter() - started) * 1000 / len(texts))
    return statistics.median(runs)


def concurrent(encoder: QueryEncoder, texts: list[str], clients: int) -> float:
    """Wall ms per query with `clients` threads sharing the encoder."""
    barrier = threading.Barrier(clients)

    def worker(k: int) -> None:
        barrier.wait()
        for text in texts[k::clients]:
            encoder.encode(text)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - started) * 1000 / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--cache-dir", type=Path, default=None, help="ONNX export folder (default <data_dir>/models).")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cache_dir = args.cache_dir or get_settings().data_dir / "models"
    sets = load_sets(args.queries)

    import torch

    torch_model = Embedder(MODEL, batch_size=4)
    torch_model.load()
    onnx_models = {threads: OnnxEncoder(MODEL, cache_dir, threads=threads) for threads in (1, 2)}
    for model in onnx_models.values():
        model.load()
    tokens = {
        name: statistics.mean(len(onnx_models[1]._tokenizer.encode(t).ids) for t in texts)
        for name, texts in sets.items()
    }
    print(f"model {MODEL}; {', '.join(f'{len(v)} {k} queries (mean {tokens[k]:.0f} tokens)' for k, v in sets.items())}")
    print(f"{'backend':8} {'threads':>7} {'batch':>5} {'short ms/q':>10} {'long ms/q':>10}")
    for backend in ("torch", "onnx"):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            encode = torch_model.encode_queries if backend == "torch" else onnx_models[threads].encode_queries
            for batch in (1, 4):
                cells = [ms_per_query(encode, texts, batch, args.repeats) for texts in sets.values()]
                print(f"{backend:8} {threads:>7} {batch:>5} {cells[0]:>10.2f} {cells[1]:>10.2f}")

    torch.set_num_threads(2)
    for name, texts in sets.items():
        reference = np.concatenate([torch_model.encode_queries([t]) for t in texts])
        singles = np.concatenate([onnx_models[1].encode_queries([t]) for t in texts])
        batched = np.concatenate([onnx_models[1].encode_queries(texts[i : i + 4]) for i in range(0, len(texts), 4)])
        cosine = float(np.min(np.sum(reference * singles, axis=1)))
        print(
            f"{name}: max |onnx - torch| = {np.abs(singles - reference).max():.2e} (batch 1), "
            f"{np.abs(batched - reference).max():.2e} (batch 4); min cosine {cosine:.6f}"
        )

    texts = sets["short"] + sets["long"]
    for clients in (1, 4):
        encoder = QueryEncoder(onnx_models[1], cache_size=0)
        wall = concurrent(encoder, texts, clients)
        info = encoder.cache_info()
        print(
            f"QueryEncoder onnx/1 thread, {clients} clients, no cache: {wall:.2f} ms/query wall, "
            f"{info['runs']} runs for {info['encoded']} queries ({info['encoded'] / info['runs']:.1f}/run), "
            f"{info['encode_ms'] / info['encoded']:.2f} model ms/query"
        )
    encoder = QueryEncoder(onnx_models[1], cache_size=1024)
    concurrent(encoder, texts, 4)
    concurrent(encoder, texts, 4)
    print(f"QueryEncoder with cache, 2 passes: {encoder.cache_info()}")


if __name__ == "__main__":
    main()
