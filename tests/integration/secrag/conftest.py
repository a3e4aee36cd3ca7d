"""Shared fixtures of the ONNX tests: one export of the real model per session, and its encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from secrag.models.embedder import Embedder
from secrag.models.onnx_export import export_onnx
from secrag.models.onnx_model import OnnxEncoder

from .onnx_cases import MODEL


@pytest.fixture(scope="session")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(scope="session")
def exported(onnx_dir: Path) -> Path:
    return export_onnx(MODEL, onnx_dir)


@pytest.fixture(scope="session")
def onnx_encoder(exported: Path, onnx_dir: Path) -> OnnxEncoder:
    encoder = OnnxEncoder(MODEL, onnx_dir)
    encoder.load()
    return encoder


@pytest.fixture(scope="session")
def reference() -> Embedder:
    return Embedder(MODEL, batch_size=1)
