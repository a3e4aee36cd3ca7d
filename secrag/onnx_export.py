"""The allowlisted embedding models as ONNX files, made once per model and weights and kept on disk.

An fp32 model is exported from its pip-packaged weights with torch (the only use of torch on this
path). An int8 model id (`ModelInfo.quantized_from`) is that export quantised by onnxruntime's
dynamic quantiser (int8 weights per output channel, activations quantised at run time; onnxruntime
picks the kernels for the CPU it runs on, so one file serves AVX2, AVX-512 and VNNI machines alike).
Both are deterministic: the same weights give the same bytes, and each file's sha256 is kept beside it
(`<file>.sha256`) and checked when the file is reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

from .embedder import ModelInfo, model_info
from .errors import ConfigError

log = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17
RECIPE = f"bert-last-hidden-state-opset{OPSET}-v1"  # part of the file name's hash: change it to re-export
# How an int8 model is made from its fp32 export (also part of the hash). Pre-processing the graph
# (onnxruntime's quant_pre_process) measured no faster here, so it is skipped.
QUANTIZATION = "ort-dynamic-qint8-per-channel-v1"
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
