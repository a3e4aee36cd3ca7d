"""The allowlisted embedding model as ONNX (exported once, cached on disk) and an onnxruntime encoder for it."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embedder import AllowlistedModel, ModelInfo, model_info
from .errors import ConfigError

log = logging.getLogger(__name__)

OPSET = 17
RECIPE = f"bert-last-hidden-state-opset{OPSET}-v1"  # part of the file name's hash: change it to re-export
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
HASHED_FILES = ("model.safetensors", "config.json")


def model_digest(info: ModelInfo) -> str:
    """Short sha256 over the model's weights, its config and the export recipe."""
    path = info.path()
    digest = hashlib.sha256(RECIPE.encode())
    for name in HASHED_FILES:
        try:
            with open(path / name, "rb") as fh:
                digest.update(name.encode())
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            raise ConfigError(f"cannot read {name} of model {info.model_id} in {path}: {exc}") from exc
    return digest.hexdigest()[:12]


def onnx_path(model_id: str, cache_dir: Path) -> Path:
    """Where the ONNX export of this model (and these weights) lives in cache_dir."""
    info = model_info(model_id)
    return Path(cache_dir) / f"{info.model_id}-{model_digest(info)}.onnx"


def _export(info: ModelInfo, out: Path) -> None:
    import torch
    from transformers import AutoModel

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
            out = self.model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            hidden: torch.Tensor = out.last_hidden_state
            return hidden

    model = AutoModel.from_pretrained(str(info.path()), local_files_only=True).eval()
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    types = torch.zeros_like(ids)
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHiddenState(model),
            (ids, mask, types),
            str(out),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes={name: axes for name in (*INPUTS, "last_hidden_state")},
            opset_version=OPSET,
            dynamo=False,
        )


def export_onnx(model_id: str, cache_dir: Path) -> Path:
    """The model exported to ONNX in cache_dir (reused when present; written atomically)."""
    info = model_info(model_id)
    cache_dir = Path(cache_dir)
    target = onnx_path(model_id, cache_dir)
    if target.is_file():
        return target
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    started = time.perf_counter()
    log.info("exporting embedding model %s to ONNX at %s", model_id, target)
    tmp: Path | None = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=cache_dir, prefix=f".{target.stem}-", suffix=".onnx.tmp")
        os.close(fd)
        tmp = Path(name)
        _export(info, tmp)
        import onnx

        onnx.checker.check_model(str(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; other users serving the API read it too
        os.replace(tmp, target)
        tmp = None
    except Exception as exc:
        raise ConfigError(
            f"cannot export embedding model {model_id} to ONNX in {cache_dir}: {type(exc).__name__}: {exc}",
            hint="check that the folder is writable and torch, transformers and onnx are installed",
        ) from exc
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    log.info("exported embedding model %s to %s in %.2f s", model_id, target, time.perf_counter() - started)
    return target


class OnnxEncoder(AllowlistedModel):
    """Encodes texts with the ONNX export on onnxruntime: mean pooling, unit-length float32 rows."""

    def __init__(self, model_id: str, cache_dir: Path, threads: int = 1) -> None:
        self.info = model_info(model_id)
        self.cache_dir = Path(cache_dir)
        self.threads = threads
        self.path: Path | None = None
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._pad_id = 0
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Export if needed, then open the tokenizer and the onnxruntime session (once)."""
        with self._lock:
            if self._session is None:
                self._load()

    def _load(self) -> None:
        path = export_onnx(self.model_id, self.cache_dir)
        started = time.perf_counter()
        model_dir = self.info.path()
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            padding = tokenizer.padding or {}
            tokenizer.no_padding()  # the shipped tokenizer pads to 128: we pad each batch to its longest item
            tokenizer.enable_truncation(self._max_seq_length(model_dir))
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(
                f"cannot load the ONNX model {path}: {type(exc).__name__}: {exc}",
                hint="delete the file to export it again",
            ) from exc
        self._inputs = tuple(i.name for i in session.get_inputs())
        if not {"input_ids", "attention_mask"} <= set(self._inputs):
            raise ConfigError(f"ONNX model {path} lacks input_ids/attention_mask inputs: {self._inputs}")
        self._pad_id = int(padding.get("pad_id", 0))
        self._tokenizer = tokenizer
        self._session = session
        self.path = path
        dims = self._encode(["dimension check"]).shape[1]
        if dims != self.dimensions:
            self._session = None
            raise ConfigError(f"model {self.model_id} produces {dims} dimensions, the allowlist says {self.dimensions}")
        log.info(
            "loaded ONNX model %s from %s in %.2f s (%d threads)",
            self.model_id,
            path,
            time.perf_counter() - started,
            self.threads,
        )

    @staticmethod
    def _max_seq_length(model_dir: Path) -> int:
        pooling = model_dir / "1_Pooling" / "config.json"
        if pooling.is_file():
            config = json.loads(pooling.read_text(encoding="utf-8"))
            modes = {k for k, v in config.items() if k.startswith("pooling_mode_") and v}
            if modes != {"pooling_mode_mean_tokens"}:
                raise ConfigError(f"model in {model_dir} does not use mean pooling; the ONNX encoder only does that")
        sbert = model_dir / "sentence_bert_config.json"
        if sbert.is_file():
            return int(json.loads(sbert.read_text(encoding="utf-8")).get("max_seq_length", 256))
        return 256

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text (a batch is padded to its longest item)."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if self._session is None:
            self.load()
        return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        encodings = [self._tokenizer.encode(str(t)) for t in texts]
        out = np.empty((len(encodings), self.dimensions), dtype=np.float32)
        for rows in _length_groups([len(e.ids) for e in encodings]):
            out[rows] = self._run([encodings[i] for i in rows])
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = 1
            types[row, :n] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {name: feeds[name] for name in self._inputs})[0]
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        vectors: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32, copy=False)
        return vectors


def _length_groups(lengths: list[int], waste: float = 0.3, slack: int = 32) -> list[list[int]]:
    """Row indices grouped by similar length, so padding a group to its longest wastes at most ~`waste`."""
    groups: list[list[int]] = []
    total = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        n = lengths[i]
        if groups and (len(groups[-1]) + 1) * n <= (1 + waste) * (total + n) + slack:
            groups[-1].append(i)
            total += n
        else:
            groups.append([i])
            total = n
    return groups
