"""The ONNX export of the real model: exported once, reused, and its vectors equal sentence-transformers'."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from secrag.errors import ConfigError
from secrag.models.embedder import Embedder
from secrag.models.encoders import document_encoder
from secrag.models.onnx_model import OnnxEncoder
from serving.search.encoder import QueryEncoder, shared_encoder
from tests.integration.secrag.onnx_cases import INT8, LONG, MODEL, QUERIES


def test_vectors_match_sentence_transformers(onnx_encoder: OnnxEncoder, reference: Embedder) -> None:
    assert len(onnx_encoder._tokenizer.encode(LONG, add_special_tokens=False).ids) >= 256  # gets truncated
    ours = np.stack([onnx_encoder.encode([q])[0] for q in QUERIES])
    theirs = reference.encode(QUERIES)
    assert ours.dtype == np.float32 and ours.shape == (len(QUERIES), 384)
    assert np.abs(ours - theirs).max() < 1e-4
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_minilm_vectors_are_those_of_before_the_model_registry(onnx_encoder: OnnxEncoder) -> None:
    """MiniLM has no prefix and mean pooling: a chunk and a query get, bit for bit, the raw ONNX output
    mean-pooled and normalised as the encoder did before models were configuration, so the vectors in a
    store stay valid. The first components of one vector are pinned too (to 1e-3: CPUs differ below)."""
    for text in QUERIES:
        e = onnx_encoder._tokenizer.encode(text)
        ids, types = np.array([e.ids], dtype=np.int64), np.array([e.type_ids], dtype=np.int64)
        mask = np.ones_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = onnx_encoder._session.run(None, feeds)[0]
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        before = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        assert onnx_encoder.encode_documents([text]).tobytes() == before.tobytes()
        assert onnx_encoder.encode_queries([text]).tobytes() == before.tobytes()
    pinned = [-0.0763, 0.0612, -0.0173, 0.0612, -0.0429, -0.0296]
    assert np.abs(onnx_encoder.encode_queries(["mimikatz"])[0][:6] - pinned).max() < 1e-3


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


def test_torch_cannot_run_the_int8_model() -> None:
    with pytest.raises(ConfigError, match="int8 ONNX model"):
        Embedder(INT8)


def test_documents_are_encoded_with_onnx(tmp_path: Path) -> None:
    assert isinstance(document_encoder(INT8, batch_size=64, threads=1, cache_dir=tmp_path), OnnxEncoder)
    assert isinstance(document_encoder(MODEL, batch_size=64, threads=1, cache_dir=tmp_path), OnnxEncoder)


def test_an_int8_query_vector_does_not_depend_on_the_queries_beside_it(exported: Path, onnx_dir: Path) -> None:
    """An int8 model quantises a run's activations with one scale for the batch: documents (batched) move with
    their batch-mates, queries are encoded alone, so a search's vector never depends on concurrent searches."""
    int8 = OnnxEncoder(INT8, onnx_dir)
    alone = int8.encode_queries(["lsass memory dump"])[0]
    beside = int8.encode_queries(["lsass memory dump", LONG, "mimikatz"])
    assert beside[0].tobytes() == alone.tobytes()
    assert beside[1].tobytes() == int8.encode_queries([LONG])[0].tobytes()
    batched = int8.encode(["lsass memory dump", "mimikatz"])[0]  # of similar lengths: one run
    assert not np.array_equal(batched, alone)  # what a batch of documents does to the same text
    assert int8.encode_queries([]).shape == (0, 384)
