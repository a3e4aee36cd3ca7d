"""Fine-tune the encoder on the store's procedure examples and compare it with its base on the upstream
validation split (held-back actors), in fp32 through sentence-transformers.

    python bench/train.py --database-url postgresql://... [--steps 600] [--out .secrag/bench/trained]
        [--base-only] [--skip-base] [--no-validate] [--json]

Prints the training time, peak memory and both models' validation figures (vote of the 20 nearest training
examples, nearest technique documents, both).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from pipeline.training.examples import read_labelled
from pipeline.training.fine_tune import Recipe, fine_tune
from pipeline.training.validation import validate
from secrag.db import database
from secrag.models.registry import model_info
from secrag.models.weights import weights_dir
from secrag.settings import get_settings


def encoder(folder: Path, max_tokens: int) -> object:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    model.max_seq_length = max_tokens

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False))

    return encode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--base", default="all-MiniLM-L6-v2")
    ap.add_argument("--steps", type=int, default=Recipe.steps)
    ap.add_argument("--out", type=Path, default=Path(".secrag/bench/trained"))
    ap.add_argument("--base-only", action="store_true")
    ap.add_argument("--skip-base", action="store_true")
    ap.add_argument("--no-validate", action="store_true", help="train only (time and memory)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    settings = get_settings()
    with database.connect(args.database_url, autocommit=True) as conn:
        data = read_labelled(conn, settings.sql_dir)
    info = model_info(args.base)
    base = weights_dir(info, settings.models_dir)
    report: dict[str, object] = {"data": data.counts(), "digest": data.digest()[:12]}
    print(json.dumps(report))  # noqa: T201
    if not args.skip_base:
        t = time.monotonic()
        report["base"] = validate(encoder(base, info.max_tokens), data)  # type: ignore[arg-type]
        report["base"]["seconds"] = round(time.monotonic() - t, 1)  # type: ignore[index]
        print(json.dumps({"base": report["base"]}))  # noqa: T201
    if not args.base_only:
        recipe = Recipe(steps=args.steps)
        t = time.monotonic()
        fine_tune(
            base,
            data.pairs(),
            recipe,
            args.out,
            progress=lambda s, n, loss: print(f"step {s}/{n} loss {loss:.3f} {time.monotonic() - t:.0f}s", flush=True),  # noqa: T201
        )
        report["train_seconds"] = round(time.monotonic() - t, 1)
        report["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        if not args.no_validate:
            report["tuned"] = validate(encoder(args.out, info.max_tokens), data)  # type: ignore[arg-type]
        print(json.dumps({k: report.get(k) for k in ("tuned", "train_seconds", "peak_rss_mib")}))  # noqa: T201
    if args.json:
        print(json.dumps(report, indent=2))  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
