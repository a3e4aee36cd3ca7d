"""Fine-tuning a sentence encoder on (procedure example, technique text) pairs with in-batch negatives: the
multiple-negatives ranking loss of sentence-transformers, written out in torch so every step is seeded and in
one thread order (the same inputs give the same weights), with one example per technique in a batch so no
in-batch negative is a positive."""

from __future__ import annotations

import logging
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# The files of a sentence-transformers folder that the training does not change (copied beside new weights).
_KEPT_FILES = (
    "config.json",
    "config_sentence_transformers.json",
    "modules.json",
    "sentence_bert_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "1_Pooling/config.json",
)


@dataclass(frozen=True)
class Recipe:
    """How a model is trained; every field is part of the trained model's version."""

    steps: int = 600
    batch_size: int = 32
    learning_rate: float = 3e-5
    warmup_steps: int = 30
    max_tokens: int = 64
    scale: float = 20.0  # cosine similarities times this are the loss's logits
    seed: int = 1337
    threads: int = 2  # torch's intra-op threads: part of the thread order, so of the result

    def as_dict(self) -> dict[str, float | int]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Pair:
    """A training pair: an example's text and its label's text (the technique's name and description)."""

    anchor: str
    positive: str
    label: str  # the technique id: at most one pair per label in a batch


def batches(pairs: Sequence[Pair], recipe: Recipe) -> list[list[Pair]]:
    """`recipe.steps` batches of distinct labels, drawn by a seeded shuffle of the pairs (each pass over the
    pairs in a new order; a pair whose label is already in the batch waits for the next batch)."""
    if recipe.steps > 0 and (recipe.batch_size < 2 or len({p.label for p in pairs}) < 2):
        # No batch could hold a negative, so no pass would ever end a batch: refuse instead of looping.
        raise ValueError(
            f"in-batch negatives need batches of at least two labels: {len({p.label for p in pairs})} labels "
            f"in {len(pairs)} pairs, batch size {recipe.batch_size}"
        )
    rng = random.Random(recipe.seed)
    order: list[Pair] = []
    out: list[list[Pair]] = []
    waiting: list[Pair] = []
    while len(out) < recipe.steps:
        if not order:
            order = list(pairs)
            rng.shuffle(order)
        batch: list[Pair] = []
        labels: set[str] = set()
        kept: list[Pair] = []
        for pair in [*waiting, *order]:
            if len(batch) < recipe.batch_size and pair.label not in labels:
                batch.append(pair)
                labels.add(pair.label)
            else:
                kept.append(pair)
        waiting, order = [], kept
        if len(batch) < 2:  # fewer than two labels left in this pass: start the next one
            waiting, order = batch, []
            continue
        out.append(batch)
    return out


def fine_tune(
    base: Path,
    pairs: Sequence[Pair],
    recipe: Recipe,
    out: Path,
    *,
    progress: Callable[[int, int, float], None] | None = None,
) -> Path:
    """Train the sentence-transformers model in `base` (mean pooling) on `pairs` and save it to `out` as a
    folder of the same shape; `progress(step, steps, loss)` every 25 steps."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(recipe.seed)
    torch.use_deterministic_algorithms(True)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(recipe.threads)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(base))
        model = AutoModel.from_pretrained(str(base))
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: min(1.0, (step + 1) / max(1, recipe.warmup_steps))
        )

        def embed(texts: list[str]) -> torch.Tensor:
            enc = tokenizer(texts, padding=True, truncation=True, max_length=recipe.max_tokens, return_tensors="pt")
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

        plan = batches(pairs, recipe)
        started = time.monotonic()
        for step, batch in enumerate(plan, start=1):
            anchors = embed([p.anchor for p in batch])
            positives = embed([p.positive for p in batch])
            logits = anchors @ positives.T * recipe.scale
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            if progress is not None and (step % 25 == 0 or step == len(plan)):
                progress(step, len(plan), loss.item())
        log.info("fine-tuned %d steps in %.0f s", len(plan), time.monotonic() - started)
        model.eval()
        _save(base, out, {k: v.contiguous() for k, v in model.state_dict().items()}, save_file)
    finally:
        torch.set_num_threads(previous_threads)
    return out


def _save(base: Path, out: Path, weights: dict[str, Any], save_file: Callable[..., None]) -> None:
    """The trained weights beside the base folder's other files, written to a temporary folder and renamed."""
    work = out.with_name(out.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for name in _KEPT_FILES:
        source = base / name
        if source.is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, work / name)
    save_file(weights, str(work / "model.safetensors"), metadata={"format": "pt"})
    (work / "model.safetensors").chmod(0o644)  # safetensors writes 0600: the API may run as another user
    shutil.rmtree(out, ignore_errors=True)
    work.rename(out)
