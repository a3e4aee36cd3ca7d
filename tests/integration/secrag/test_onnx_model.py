"""The ONNX export of the real model: exported once, reused, and its vectors equal sentence-transformers'."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from secrag.embedder import Embedder
from secrag.encoders import document_encoder
from secrag.errors import ConfigError
from secrag.onnx_model import OnnxEncoder, export_onnx, file_sha256
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
    # no temporary file left behind; the checksum beside the export
    assert sorted(p.name for p in onnx_dir.iterdir()) == [exported.name, exported.name + ".sha256"]


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


INT8 = "all-MiniLM-L6-v2-int8"


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


def test_torch_cannot_run_the_int8_model() -> None:
    with pytest.raises(ConfigError, match="int8 ONNX model"):
        Embedder(INT8)


def test_documents_are_encoded_with_onnx(tmp_path: Path) -> None:
    assert isinstance(document_encoder(INT8, batch_size=64, threads=1, cache_dir=tmp_path), OnnxEncoder)
    assert isinstance(document_encoder(MODEL, batch_size=64, threads=1, cache_dir=tmp_path), OnnxEncoder)
