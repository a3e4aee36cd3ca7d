"""Build throughput with 1, 2 and 4 run workers on one machine: the embedding step, which is most of a build.

    python bench/run_workers.py --database-url postgresql://...secrag_bench... [--sample 3000] [--workers 1 2 4]

A full build spends about 92 % of its time embedding (bench/build.py: 886.6 s of 961.5 s on the
AVX-512 EPYC), and each run embeds its own source, so two runs at once (deploy/dagster.yaml allows 2)
are two encoders at once. This starts W processes, as W run workers would be, each with the pipeline's
document encoder (the active model, batches of 256 as the pipeline hands them over) and
SECRAG_EMBEDDING_THREADS-style thread counts, gives each an equal share of one sample of the store's
chunks, and prints the total chunks per second from the first start to the last finish:

- 1 worker, one thread per core (the default, 0);
- W workers, one thread per core each (the default for all: they contend for the cores);
- W workers, cores / W threads each (at least one; SECRAG_EMBEDDING_THREADS set for sharing the machine).

On Kubernetes each run is its own pod with its own CPU request, so there the figure that scales is the
one-worker rate per pod.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import time

from doc_encoders import chunk_sample, cpu_line

from secrag.db import database
from secrag.models.onnx_model import OnnxEncoder
from secrag.settings import Settings

BATCH = 256


def work(model: str, threads: int, texts: list[str], ready: mp.Barrier, out: mp.Queue) -> None:  # type: ignore[type-arg]
    encoder = OnnxEncoder(model, Settings().models_dir, threads=threads)
    encoder.load()
    encoder.encode_documents(texts[:32])  # warm
    ready.wait()
    started = time.monotonic()
    for i in range(0, len(texts), BATCH):
        encoder.encode_documents(texts[i : i + BATCH])
    out.put((started, time.monotonic(), len(texts)))


def run(model: str, workers: int, threads: int, sample: list[str]) -> float:
    ctx = mp.get_context("spawn")
    ready, out = ctx.Barrier(workers), ctx.Queue()
    share = len(sample) // workers
    procs = [
        ctx.Process(target=work, args=(model, threads, sample[w * share : (w + 1) * share], ready, out))
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    spans = [out.get() for _ in procs]
    for p in procs:
        p.join()
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    return sum(s[2] for s in spans) / (last - first)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--sample", type=int, default=3000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="run worker counts (1 always runs)")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    cores = os.cpu_count() or 1
    print(cpu_line())
    with database.connect(args.database_url, autocommit=True) as conn:
        model = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()[0]  # type: ignore[index]
    sample = chunk_sample(args.database_url, args.sample)
    print(f"model {model}, {len(sample)} chunks")
    one = run(model, 1, 0, sample)
    print(f"1 worker,  {cores} threads:          {one:6.1f} chunks/s  1.00x")
    for workers in (w for w in args.workers if w > 1):
        for threads in dict.fromkeys((0, max(1, cores // workers))):
            rate = run(model, workers, threads, sample)
            label = f"{threads or cores} threads each"
            print(f"{workers} workers, {label:<20} {rate:6.1f} chunks/s  {rate / one:.2f}x")


if __name__ == "__main__":
    main()
