"""Embedding models side by side on one store: pipeline embedding speed and dev-set quality per model.

    python bench/models.py --database-url postgresql://...secrag_bench... \\
        --queries ../shared/eval/dev_queries.jsonl [--models all-MiniLM-L6-v2,all-MiniLM-L6-v2-int8]

For each model, in the order given: embeds every chunk still lacking its vector with the encoder the
pipeline uses for it (pipeline/embedding.embed_pending; sentence-transformers for fp32, onnxruntime for
int8; --onnx: onnxruntime for both) and prints chunks per second, then serves the API in process pinned to that model
(SECRAG_SERVING_MODEL, query cache off, quotas off) and scores the labelled queries like
bench/quality.py. Prints nDCG@10 per task and mode for each model and the difference to the first.
Name the CPU with the figures: the model's speed depends on it (AVX2, AVX-512, VNNI).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fastapi.testclient import TestClient
from quality import Scores, evaluate, load_items, means

from pipeline.embedding import embed_pending
from pipeline.resources import EmbedderResource
from secrag.cpu import read_cpuinfo
from secrag.db import database
from secrag.files.package_data import sql_dir
from secrag.models.embedder import TextModel
from secrag.models.onnx_model import OnnxEncoder
from secrag.settings import Settings
from serving.api.app import create_app
from serving.settings import ServingSettings

DEFAULT_MODELS = "all-MiniLM-L6-v2,all-MiniLM-L6-v2-int8"


def embed(url: str, model: str, settings: Settings, *, onnx: bool) -> str:
    encoder: TextModel
    if onnx:  # the same vectors as torch's (to 1e-4), in a third of the time
        encoder = OnnxEncoder(model, settings.models_dir, threads=settings.embedding_threads)
    else:
        encoder = EmbedderResource(
            model=model, batch_size=settings.embedding_batch_size, threads=settings.embedding_threads
        ).embedder()
    encoder.load()
    with database.connect(url, autocommit=True) as conn:
        stats = embed_pending(conn, encoder, sql_dir())
    rate = f"{stats.chunks_per_second:.1f} chunks/s" if stats.embedded else "nothing to embed"
    how = type(encoder).__name__
    return f"{model} ({how}): embedded {stats.embedded} of {stats.chunks} chunks in {stats.seconds:.1f} s ({rate})"


def quality(url: str, model: str, items: list[dict], modes: list[str]) -> tuple[Scores, int]:
    settings = ServingSettings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        serving_model=model,
        mcp_enabled=False,
        query_cache_size=0,
        result_cache_size=0,
        anonymous_rate_per_minute=0,
        anonymous_heavy_concurrency=0,
    )
    with TestClient(create_app(settings)) as api:
        return evaluate(api, items, modes, {})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--modes", default="hybrid,fts,vector,fuzzy")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--no-embed", action="store_true", help="Only score (the vectors are there).")
    ap.add_argument("--onnx", action="store_true", help="Embed every model with onnxruntime (fp32 included).")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cpu = read_cpuinfo()
    if cpu is not None:
        vector_isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni") if f in cpu.flags]
        print(f"CPU: {cpu.model} ({', '.join(vector_isa) or 'no AVX2'})")
    models = args.models.split(",")
    modes = args.modes.split(",")
    items = load_items(args.queries, args.limit)
    settings = Settings()
    if not args.no_embed:
        for model in models:
            print(embed(args.database_url, model, settings, onnx=args.onnx), flush=True)
    results = {model: quality(args.database_url, model, items, modes) for model in models}
    base = models[0]
    header = f"{'task':<28} {'mode':<8} {'n':>5} " + " ".join(f"{m[-24:]:>24}" for m in models)
    print(header + f" {'diff':>7}")
    for key in sorted(results[base][0], key=lambda k: (k[0] == "ALL", k)):
        values = [means(results[m][0][key])[0] for m in models]
        n = len(results[base][0][key])
        cells = " ".join(f"{v:>24.3f}" for v in values)
        print(f"{key[0]:<28} {key[1]:<8} {n:>5} {cells} {values[-1] - values[0]:>+7.3f}")
    for model in models:
        if results[model][1]:
            print(f"{model}: {results[model][1]} requests failed (counted as empty rankings)")


if __name__ == "__main__":
    main()
