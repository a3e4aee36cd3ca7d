"""Does the peer encode queries as secrag does? Cosine of its query vectors to secrag's query encoder's.

The peer's vectors are made here (bench/peer/server.py's Encoder); secrag's by its own query model
(serving/search/encoder.py make_model, onnx, one thread) in secrag's .venv, run as a child process, one query
a run as a lone client's request is encoded: int8 quantises activations per run, so a query batched with
others (secrag's micro-batching under concurrency, padded to the longest) comes out slightly different.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import numpy as np
from server import DEFAULT_MODEL_DIR, DEFAULT_ONNX, MODEL_ID, Encoder, only_file

SECRAG_SIDE = f"""
import json, sys
from serving.search.encoder import make_model
model = make_model({MODEL_ID!r}, "onnx", threads=1)
print(json.dumps([model.encode_queries([q])[0].tolist() for q in json.load(sys.stdin)]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=Path, default=Path("../shared/eval/dev_queries.jsonl"))
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--secrag-python", default=".venv/bin/python")
    args = parser.parse_args()
    lines = args.queries.read_text(encoding="utf-8").splitlines()
    queries = list(dict.fromkeys(json.loads(line)["query"] for line in lines if line.strip()))[: args.n]
    done = subprocess.run(
        [args.secrag_python, "-c", SECRAG_SIDE],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    theirs = np.array(json.loads(done.stdout), dtype=np.float32)
    encoder = Encoder(only_file(DEFAULT_ONNX), only_file(DEFAULT_MODEL_DIR))
    ours = np.stack([encoder.encode(q) for q in queries])
    cosines = (ours * theirs).sum(axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    print(f"{len(queries)} queries: cosine min {cosines.min():.6f}, mean {cosines.mean():.6f}")
    print(f"max abs difference per dimension {np.abs(ours - theirs).max():.2e}")


if __name__ == "__main__":
    main()
