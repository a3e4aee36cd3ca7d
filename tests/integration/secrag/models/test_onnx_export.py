"""The ONNX files of the real model: exported once, reused, reproducible, checksummed; int8 made from fp32."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from secrag.errors import ConfigError
from secrag.models.onnx_export import export_onnx, file_sha256
from secrag.models.onnx_model import OnnxEncoder
from tests.integration.secrag.onnx_cases import INT8, MODEL, QUERIES


def test_export_is_written_once_and_reused(exported: Path, onnx_dir: Path) -> None:
    assert exported.parent == onnx_dir and exported.name.startswith(f"{MODEL}-") and exported.suffix == ".onnx"
    before = exported.stat()
    again = export_onnx(MODEL, onnx_dir)
    after = again.stat()
    assert again == exported and (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # no temporary file left behind; the checksum beside the export
    assert sorted(p.name for p in onnx_dir.iterdir()) == [exported.name, exported.name + ".sha256"]


def test_export_failures_are_config_errors(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot export"):
        export_onnx(MODEL, blocker / "models")
    with pytest.raises(ConfigError, match="not in the model registry"):
        export_onnx("bert-huge", tmp_path)


def test_the_int8_model_is_reproducible_and_close_to_fp32(
    exported: Path, onnx_dir: Path, onnx_encoder: OnnxEncoder, tmp_path: Path
) -> None:
    """Quantised from the fp32 export with no network; the same bytes on a second export in another folder."""
    quantised = export_onnx(INT8, onnx_dir)
    assert quantised.name.startswith(f"{INT8}-") and quantised != exported
    assert quantised.stat().st_size < exported.stat().st_size / 3
    checksum = (onnx_dir / (quantised.name + ".sha256")).read_text().strip()
    assert file_sha256(quantised) == checksum
    again = export_onnx(INT8, tmp_path / "elsewhere")
    assert file_sha256(again) == checksum
    assert file_sha256(again.parent / exported.name) == file_sha256(exported)  # the fp32 export is reproducible too
    int8 = OnnxEncoder(INT8, onnx_dir)
    assert (int8.model_id, int8.dimensions) == (INT8, 384)
    cosines = np.sum(int8.encode(QUERIES) * onnx_encoder.encode(QUERIES), axis=1)
    assert cosines.min() >= 0.95, cosines


def test_a_cached_export_that_fails_its_checksum_is_made_again(onnx_dir: Path, tmp_path: Path) -> None:
    path = export_onnx(INT8, tmp_path)
    good = file_sha256(path)
    with open(path, "r+b") as fh:  # a flipped byte
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert file_sha256(path) != good
    assert export_onnx(INT8, tmp_path) == path and file_sha256(path) == good
