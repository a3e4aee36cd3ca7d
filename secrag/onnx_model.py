"""The allowlisted embedding model as ONNX (exported once, cached on disk) and an onnxruntime encoder for it.

An int8 model id (`ModelInfo.quantized_from`) is the fp32 export quantised by onnxruntime's dynamic
quantiser (int8 weights per output channel, activations quantised at run time; onnxruntime picks the
kernels for the CPU it runs on, so one file serves AVX2, AVX-512 and VNNI machines alike). Both
exports are deterministic: the same weights give the same bytes, and each file's sha256 is kept beside
it (`<file>.sha256`) and checked when the file is reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embedder import AllowlistedModel, ModelInfo, model_info
from .errors import ConfigError

log = logging.getLogger(__name__)

OPSET = 17
RECIPE = f"bert-last-hidden-state-opset{OPSET}-v1"  # part of the file name's hash: change it to re-export
# How an int8 model is made from its fp32 export (also part of the hash). Pre-processing the graph
# (onnxruntime's quant_pre_process) measured no faster here, so it is skipped.
QUANTIZATION = "ort-dynamic-qint8-per-channel-v1"
# Rows per model run: a batch of 256-token texts needs batch x heads x 256 x 256 floats of attention.
MAX_BATCH = 32
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
HASHED_FILES = ("model.safetensors", "config.json")


def model_digest(info: ModelInfo) -> str:
    """Short sha256 over the model's weights, its config and the export recipe."""
    path = info.path()
    digest = hashlib.sha256(RECIPE.encode())
    if info.quantized_from:
        digest.update(QUANTIZATION.encode())
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


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checksum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _verified(target: Path) -> bool:
    """Whether a cached export is intact: its sha256 equals the one written beside it (a file from before
    checksums were kept gets one now)."""
    if not target.is_file():
        return False
    actual = file_sha256(target)
    recorded = _checksum_path(target)
    if not recorded.is_file():
        _write_atomically(recorded, actual.encode())
        return True
    if recorded.read_text(encoding="ascii").strip() == actual:
        return True
    log.warning("the cached model %s does not match its checksum; exporting it again", target)
    return False


def _write_atomically(target: Path, data: bytes) -> None:
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(name, 0o644)
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _without_preprocessing_advice() -> Iterator[None]:
    """onnxruntime's quantiser logs advice to pre-process on the root logger (measured: no gain here)."""

    def drop(record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()

    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def _quantize(source: Path, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _without_preprocessing_advice():
        quantize_dynamic(str(source), str(out), per_channel=True, weight_type=QuantType.QInt8)


def export_onnx(model_id: str, cache_dir: Path) -> Path:
    """The model exported to ONNX in cache_dir (reused when present and intact; written atomically).

    An int8 model is its fp32 model's export (made first, and kept) quantised.
    """
    info = model_info(model_id)
    cache_dir = Path(cache_dir)
    target = onnx_path(model_id, cache_dir)
    if _verified(target):
        return target
    source = export_onnx(info.quantized_from, cache_dir) if info.quantized_from else None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    started = time.perf_counter()
    log.info("%s embedding model %s to %s", "quantising" if source else "exporting", model_id, target)
    tmp: Path | None = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=cache_dir, prefix=f".{target.stem}-", suffix=".onnx.tmp")
        os.close(fd)
        tmp = Path(name)
        if source is not None:
            _quantize(source, tmp)
        else:
            _export(info, tmp)
        import onnx

        onnx.checker.check_model(str(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; other users serving the API read it too
        checksum = file_sha256(tmp)
        os.replace(tmp, target)
        tmp = None
        _write_atomically(_checksum_path(target), checksum.encode())
    except Exception as exc:
        raise ConfigError(
            f"cannot export embedding model {model_id} to ONNX in {cache_dir}: {type(exc).__name__}: {exc}",
            hint="check that the folder is writable and torch, transformers, onnx and onnxruntime are installed",
        ) from exc
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    log.info("wrote embedding model %s to %s in %.2f s", model_id, target, time.perf_counter() - started)
    return target


class OnnxEncoder(AllowlistedModel):
    """Encodes texts with the ONNX export on onnxruntime: mean pooling, unit-length float32 rows."""

    def __init__(self, model_id: str, cache_dir: Path, threads: int = 1, *, max_batch: int = MAX_BATCH) -> None:
        self.info = model_info(model_id)
        self.cache_dir = Path(cache_dir)
        self.threads = threads
        self.max_batch = max_batch
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
        for rows in _length_groups([len(e.ids) for e in encodings], self.max_batch):
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


def _length_groups(lengths: list[int], max_size: int = 1 << 30, waste: float = 0.3, slack: int = 32) -> list[list[int]]:
    """Row indices grouped by similar length, so padding a group to its longest wastes at most ~`waste`,
    at most `max_size` rows a group."""
    groups: list[list[int]] = []
    total = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        n = lengths[i]
        if groups and len(groups[-1]) < max_size and (len(groups[-1]) + 1) * n <= (1 + waste) * (total + n) + slack:
            groups[-1].append(i)
            total += n
        else:
            groups.append([i])
            total = n
    return groups
