"""The ONNX export of the real model: exported once, reused, and its vectors equal sentence-transformers'."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from secrag.embedder import Embedder
from secrag.errors import ConfigError
from secrag.onnx_model import OnnxEncoder, export_onnx
from serving.encoder import QueryEncoder, shared_encoder

MODEL = "all-MiniLM-L6-v2"
LONG = " ".join(f"Step {i}: the adversary dumps LSASS memory with procdump.exe and exfiltrates it." for i in range(40))
QUERIES = [
    "T1003",
    "mimikatz",
    "lsass memory dump",
    "how do attackers abuse rundll32 to proxy execution of code",
    "CVE-2021-44228 log4j JNDI lookup",
    LONG,
]


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


def test_export_is_written_once_and_reused(exported: Path, onnx_dir: Path) -> None:
    assert exported.parent == onnx_dir and exported.name.startswith(f"{MODEL}-") and exported.suffix == ".onnx"
    before = exported.stat()
    again = export_onnx(MODEL, onnx_dir)
    after = again.stat()
    assert again == exported and (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert [p.name for p in onnx_dir.iterdir()] == [exported.name]  # no temporary file left behind


def test_vectors_match_sentence_transformers(onnx_encoder: OnnxEncoder, reference: Embedder) -> None:
    assert len(onnx_encoder._tokenizer.encode(LONG, add_special_tokens=False).ids) >= 256  # gets truncated
    ours = np.stack([onnx_encoder.encode([q])[0] for q in QUERIES])
    theirs = reference.encode(QUERIES)
    assert ours.dtype == np.float32 and ours.shape == (len(QUERIES), 384)
    assert np.abs(ours - theirs).max() < 1e-4
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_padding_in_a_batch_does_not_change_a_vector(onnx_encoder: OnnxEncoder, reference: Embedder) -> None:
    batch = onnx_encoder.encode(QUERIES)
    singles = np.stack([onnx_encoder.encode([q])[0] for q in QUERIES])
    assert np.abs(batch - singles).max() < 1e-5
    padded = onnx_encoder._run([onnx_encoder._tokenizer.encode(q) for q in QUERIES])  # one batch: all padded
    assert np.abs(padded - singles).max() < 1e-5
    assert np.abs(batch - reference.encode(QUERIES)).max() < 1e-4


def test_long_texts_are_truncated_to_the_models_max_length(onnx_encoder: OnnxEncoder) -> None:
    a, b = onnx_encoder.encode([LONG, LONG + " And then it deletes the shadow copies."])
    assert np.array_equal(a, b)
    assert onnx_encoder.encode([]).shape == (0, 384)


def test_export_failures_are_config_errors(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot export"):
        export_onnx(MODEL, blocker / "models")
    with pytest.raises(ConfigError, match="allowlist"):
        export_onnx("bert-huge", tmp_path)


def test_concurrent_queries_are_batched_and_get_their_own_vectors(onnx_encoder: OnnxEncoder) -> None:
    encoder = QueryEncoder(onnx_encoder, cache_size=0)
    texts = [f"{q} #{i}" for i in range(4) for q in QUERIES]
    expected = {t: onnx_encoder.encode([t])[0] for t in texts}
    start = threading.Barrier(len(texts))
    got: dict[str, np.ndarray] = {}

    def call(text: str) -> None:
        start.wait()
        got[text] = encoder.encode(text)

    threads = [threading.Thread(target=call, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert max(float(np.abs(got[t] - expected[t]).max()) for t in texts) < 1e-5
    info = encoder.cache_info()
    assert info["encoded"] == len(texts) and info["runs"] < len(texts)


def test_the_shared_serving_encoder_uses_onnx(exported: Path, onnx_dir: Path, reference: Embedder) -> None:
    encoder = shared_encoder(MODEL, backend="onnx", cache_dir=onnx_dir)
    assert encoder.loaded and encoder.backend == "onnx" and (encoder.model_id, encoder.dimensions) == (MODEL, 384)
    assert isinstance(encoder.embedder, Embedder) and encoder.embedder.model_id == MODEL
    assert np.abs(encoder.encode("lsass memory dump") - reference.encode(["lsass memory dump"])[0]).max() < 1e-4
    assert encoder.cache_info()["misses"] == 1
