"""A linear query-side adapter, the alternative to fine-tuning the encoder: a d x d matrix (from the identity, with
a bias or not) applied to the general model's query vectors, trained so that a training example's bare sentence
ranks its technique's stored document vector first among all techniques, the stored vectors left as they are.
Validated on the fine-tuning's split and figures (pipeline/training: held-back actors, validation.score()).

    python bench/adapter.py --database-url postgresql://... [--model all-MiniLM-L6-v2-int8] [--epochs 20]
        [--limit 0] [--json]

The stored vectors of the examples are of their chunk text (title included), the queries the bare sentence: the
asymmetry an adapter may learn. Early stopping watches a slice of the training actors (never the validation
ones). Prints the base queries' figures and each adapter's (linear, affine), with their training seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from pipeline.training.examples import Example, LabelledData, read_labelled
from pipeline.training.trainer import GATE_FIGURE, _stored, _unit
from pipeline.training.validation import score
from secrag.db import database
from secrag.models.encoders import document_encoder
from secrag.settings import get_settings

log = logging.getLogger("bench.adapter")

DEV_SLICE = 8  # about one training actor in DEV_SLICE watches the early stopping


@dataclass(frozen=True)
class AdapterConfig:
    """How an adapter is trained: AdamW on W - I (the weight decay pulls it back to the identity)."""

    epochs: int = 20
    bias: bool = False
    scale: float = 20.0  # the logits: scale x cosine similarity to each technique's row
    lr: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 256
    patience: int = 3  # epochs without a better dev loss before stopping
    seed: int = 0


@dataclass(frozen=True)
class Adapter:
    """A trained adapter: unit(q W + b), the epoch it was kept from (0: the identity) and the dev slice's loss
    and top-1 accuracy after each epoch (from epoch 0)."""

    weight: np.ndarray
    bias: np.ndarray | None
    best_epoch: int
    dev_loss: tuple[float, ...]
    dev_top1: tuple[float, ...]

    def apply(self, queries: np.ndarray) -> np.ndarray:
        rows = queries @ self.weight
        if self.bias is not None:
            rows = rows + self.bias
        return _unit(rows)


def train_adapter(
    queries: np.ndarray,
    labels: np.ndarray,
    targets: np.ndarray,
    dev_queries: np.ndarray,
    dev_labels: np.ndarray,
    config: AdapterConfig,
) -> Adapter:
    """The adapter that ranks each query's target row (`labels` index `targets`) first: cross-entropy over the
    target rows, seeded, kept at its best epoch on the dev rows and stopped after `patience` epochs without one."""
    import torch

    if len(dev_labels) == 0:
        raise ValueError("no dev examples to stop early on")
    gen = torch.Generator().manual_seed(config.seed)
    xq, y = torch.from_numpy(np.ascontiguousarray(queries, np.float32)), torch.from_numpy(labels.astype(np.int64))
    dq, dy = (
        torch.from_numpy(np.ascontiguousarray(dev_queries, np.float32)),
        torch.from_numpy(dev_labels.astype(np.int64)),
    )
    t = torch.from_numpy(np.ascontiguousarray(targets, np.float32))
    d = xq.shape[1]
    eye = torch.eye(d)
    delta = torch.zeros(d, d, requires_grad=True)
    bias = torch.zeros(d, requires_grad=True) if config.bias else None
    params = [delta] + ([bias] if bias is not None else [])
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)

    def logits(rows: Any) -> Any:  # noqa: ANN401 - torch tensors
        mapped = rows @ (eye + delta)
        if bias is not None:
            mapped = mapped + bias
        return config.scale * torch.nn.functional.normalize(mapped, dim=1) @ t.T

    def dev() -> tuple[float, float]:
        with torch.no_grad():
            out = logits(dq)
            return float(torch.nn.functional.cross_entropy(out, dy)), float((out.argmax(dim=1) == dy).float().mean())

    def state() -> tuple[np.ndarray, np.ndarray | None]:
        with torch.no_grad():
            return (eye + delta).numpy().copy(), (bias.numpy().copy() if bias is not None else None)

    loss0, top0 = dev()
    losses, tops = [loss0], [top0]
    best = (loss0, 0, state())
    for epoch in range(1, config.epochs + 1):
        for batch in torch.randperm(len(y), generator=gen).split(config.batch_size):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(logits(xq[batch]), y[batch]).backward()
            opt.step()
        loss, top = dev()
        losses.append(loss)
        tops.append(top)
        log.debug("epoch %d: dev loss %.4f, top-1 %.4f", epoch, loss, top)
        if loss < best[0]:
            best = (loss, epoch, state())
        elif epoch - best[1] >= config.patience:
            break
    weight, b = best[2]
    return Adapter(weight, b, best[1], tuple(round(v, 4) for v in losses), tuple(round(v, 4) for v in tops))


def dev_actor(actor: str) -> bool:
    """Whether a training actor's examples watch the early stopping (a hash salted apart from the held-back one)."""
    return int(hashlib.sha256(f"adapter-dev:{actor}".encode()).hexdigest()[:8], 16) % DEV_SLICE == 0


def spread(rows: Sequence[Example], limit: int) -> tuple[Example, ...]:
    """At most `limit` rows evenly spread over `rows` (all of them when `limit` is 0)."""
    if limit <= 0 or len(rows) <= limit:
        return tuple(rows)
    return tuple(rows[math.floor(i * len(rows) / limit)] for i in range(limit))


def adapters(
    data: LabelledData,
    train_q: np.ndarray,
    val_q: np.ndarray,
    voters: np.ndarray,
    techniques: np.ndarray,
    epochs: int,
) -> dict[str, Any]:
    """Each adapter (linear, affine) trained on the training examples outside the dev slice, and its figures."""
    import torch

    # One thread: the problem is small, and torch's threads stall on cores another job is using.
    torch.set_num_threads(1)
    index: dict[str, int] = {}
    for i, t in enumerate(data.techniques):
        index.setdefault(t.technique, i)
    labels = np.asarray([index[e.technique] for e in data.train])
    dev = np.asarray([dev_actor(e.actor) for e in data.train])
    out: dict[str, Any] = {"fit_examples": int((~dev).sum()), "dev_examples": int(dev.sum())}
    # A throwaway fit on a few rows, so that neither adapter's seconds hold torch's first-call set-up.
    train_adapter(train_q[:8], labels[:8], techniques, train_q[:2], labels[:2], AdapterConfig(epochs=1))
    for name, bias in (("linear", False), ("affine", True)):
        config = AdapterConfig(epochs=epochs, bias=bias)
        started = time.monotonic()
        adapter = train_adapter(train_q[~dev], labels[~dev], techniques, train_q[dev], labels[dev], config)
        seconds = round(time.monotonic() - started, 1)
        figures = score(adapter.apply(val_q), voters, techniques, data)
        out[name] = {
            **figures,
            "train_seconds": seconds,
            "best_epoch": adapter.best_epoch,
            "dev_loss": list(adapter.dev_loss),
            "dev_top1": list(adapter.dev_top1),
            "settings": asdict(config),
        }
        log.info(
            "%s: %s %.4f in %.1fs (best epoch %d)", name, GATE_FIGURE, figures[GATE_FIGURE], seconds, adapter.best_epoch
        )
    return out


def table(report: dict[str, Any]) -> str:
    """The figures as a table, one row per query side."""
    names = ("vote", "documents", "both")
    cols = [f"{n}_{f}" for n in names for f in ("ndcg10", "p1", "recall10")]
    lines = [json.dumps({k: report[k] for k in ("model", "data", "digest", "limit", "encode_seconds")})]
    lines.append(f"{'':8}" + "".join(f"{c:>19}" for c in cols) + f"{'train_s':>9}")
    for side in ("base", "linear", "affine"):
        row = report[side]
        seconds = f"{row['train_seconds']:>9}" if "train_seconds" in row else ""
        lines.append(f"{side:8}" + "".join(f"{row[c]:>19.4f}" for c in cols) + seconds)
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--model", default="all-MiniLM-L6-v2-int8", help="the model of the stored vectors and queries")
    ap.add_argument("--epochs", type=int, default=AdapterConfig.epochs)
    ap.add_argument("--limit", type=int, default=0, help="at most N training and N validation examples (0: all)")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    settings = get_settings()
    with database.connect(args.database_url, autocommit=True) as conn:
        data = read_labelled(conn, settings.sql_dir)
        data = replace(data, train=spread(data.train, args.limit), validation=spread(data.validation, args.limit))
        voters = _stored(conn, settings.sql_dir, args.model, [e.doc_id for e in data.train])
        techniques = _stored(conn, settings.sql_dir, args.model, [t.doc_id for t in data.techniques])
    encoder = document_encoder(args.model, batch_size=64, threads=0, cache_dir=settings.models_dir)
    started = time.monotonic()
    train_q = _unit(np.asarray(encoder.encode_queries([e.text for e in data.train]), dtype=np.float32))
    val_q = _unit(np.asarray(encoder.encode_queries([e.text for e in data.validation]), dtype=np.float32))
    encode_seconds = round(time.monotonic() - started, 1)
    log.info("encoded %d training and %d validation sentences in %.1fs", len(train_q), len(val_q), encode_seconds)

    report: dict[str, Any] = {
        "model": args.model,
        "data": data.counts(),
        "digest": data.digest()[:12],
        "limit": args.limit,
        "encode_seconds": encode_seconds,
        "gate_figure": GATE_FIGURE,
        "base": score(val_q, voters, techniques, data),
    }
    report.update(adapters(data, train_q, val_q, voters, techniques, args.epochs))
    if args.json:
        print(json.dumps(report, indent=2))  # noqa: T201
    else:
        print(table(report))  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
