"""The registered embedding models as ONNX files, made once per model and weights and kept on disk.

An fp32 model is exported from its local weights (a pip package, a folder, or a hub model fetched once by
`secrag models fetch`) with torch (the only use of torch on this path): the graph gives the last hidden
state, and the encoder pools it as the registry says (mean or CLS, secrag/models/onnx_model.py), so one recipe
serves every BERT-like model. An int8 model id (`ModelInfo.quantized_from`) is that export quantised by onnxruntime's
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

from secrag.errors import ConfigError
from secrag.models.registry import ModelInfo, model_info
from secrag.models.weights import weights_dir

log = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17
RECIPE = f"bert-last-hidden-state-opset{OPSET}-v1"  # part of the file name's hash: change it to re-export
# How an int8 model is made from its fp32 export (also part of the hash). Pre-processing the graph
# (onnxruntime's quant_pre_process) measured no faster here, so it is skipped.
QUANTIZATION = "ort-dynamic-qint8-per-channel-v1"
HASHED_FILES = ("model.safetensors", "config.json")


def model_digest(info: ModelInfo, models_dir: Path) -> str:
    """Short sha256 over the model's weights, its config and the export recipe."""
    path = weights_dir(info, models_dir)
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
    return Path(cache_dir) / f"{info.model_id}-{model_digest(info, cache_dir)}.onnx"


def _sample_ids(folder: Path) -> tuple[list[list[int]], int]:
    """Two token rows of the model's own tokenizer ("hello world", "hello", padded) to trace the graph with,
    and the pad id."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    pad_id = int((tokenizer.padding or {}).get("pad_id", 0))
    tokenizer.no_padding()
    rows = [tokenizer.encode(text).ids for text in ("hello world", "hello")]
    width = max(len(r) for r in rows)
    return [r + [pad_id] * (width - len(r)) for r in rows], pad_id


def _export(info: ModelInfo, folder: Path, out: Path) -> None:
    import inspect

    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions is not None and info.max_tokens > positions:
        raise ConfigError(f"model {info.model_id}: max_tokens {info.max_tokens} exceeds its {positions} positions")
    # A model without token types (RoBERTa-like models may have none) is exported without that input.
    inputs = [name for name in INPUTS if name in inspect.signature(model.forward).parameters]

    class LastHiddenState(torch.nn.Module):  # type: ignore[misc]  # torch is read as Any (pyproject.toml [tool.mypy])
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            out = self.model(**dict(zip(inputs, tensors, strict=True)))
            hidden: torch.Tensor = out.last_hidden_state
            return hidden

    rows, pad_id = _sample_ids(folder)
    ids = torch.tensor(rows, dtype=torch.long)
    feeds = {"input_ids": ids, "attention_mask": (ids != pad_id).long(), "token_type_ids": torch.zeros_like(ids)}
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHiddenState(model),
            tuple(feeds[name] for name in inputs),
            str(out),
            input_names=inputs,
            output_names=["last_hidden_state"],
            dynamic_axes={name: axes for name in (*inputs, "last_hidden_state")},
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
    folder = weights_dir(info, cache_dir)
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
            _export(info, folder, tmp)
        import onnx

        onnx.checker.check_model(str(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; other users serving the API read it too
        checksum = file_sha256(tmp)
        os.replace(tmp, target)
        tmp = None
        _write_atomically(_checksum_path(target), checksum.encode())
    except ConfigError:
        raise
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
