"""Where a model's weights are: found in their package or folder, or a ConfigError saying how to get them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from secrag.errors import ConfigError
from secrag.models.registry import load_registry
from secrag.models.weights import check_pooling, declared_pooling, hub_folder, weights_dir

SHA = "ab" * 32
MODELS = f"""
models:
  - id: local
    source: {{directory: local}}
    pooling: cls
    dimensions: 8
    max_tokens: 16
  - id: hubbed
    source:
      hub: org/model
      revision: {"c" * 40}
      files: {{config.json: {SHA}, model.safetensors: {SHA}, tokenizer.json: null}}
    pooling: mean
    dimensions: 8
    max_tokens: 16
  - id: hubbed-int8
    quantized_from: hubbed
"""


@pytest.fixture
def models(tmp_path: Path):  # noqa: ANN201
    path = tmp_path / "models.yaml"
    path.write_text(MODELS, encoding="utf-8")
    return load_registry(path)


def _pooling(folder: Path, **modes: bool) -> None:
    (folder / "1_Pooling").mkdir(parents=True, exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 8, **modes}))


def test_a_packaged_model_is_in_its_package(tmp_path: Path) -> None:
    folder = weights_dir(load_registry(None).get("all-MiniLM-L6-v2-int8"), tmp_path)
    assert (folder / "model.safetensors").is_file() and declared_pooling(folder) == "mean"


def test_a_folder_needs_the_files_the_export_reads(models, tmp_path: Path) -> None:  # noqa: ANN001
    with pytest.raises(ConfigError, match="lacks config.json, model.safetensors, tokenizer.json"):
        weights_dir(models.get("local"), tmp_path / "models")
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (tmp_path / "local").mkdir(exist_ok=True)
        (tmp_path / "local" / name).write_text("{}")
    assert weights_dir(models.get("local"), tmp_path / "models") == tmp_path / "local"


def test_absent_hub_weights_say_to_fetch_them(models, tmp_path: Path) -> None:  # noqa: ANN001
    info = models.get("hubbed-int8")
    with pytest.raises(ConfigError, match="are not in") as caught:
        weights_dir(info, tmp_path)
    assert "secrag models fetch hubbed-int8" in caught.value.hint
    folder = hub_folder(info.source, tmp_path)  # type: ignore[arg-type]
    assert folder == tmp_path / "hub" / "org--model" / ("c" * 40)
    folder.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (folder / name).write_text("{}")
    assert weights_dir(info, tmp_path) == folder


def test_the_folder_pooling_must_match_the_registry(models, tmp_path: Path) -> None:  # noqa: ANN001
    info = models.get("local")
    check_pooling(info, tmp_path)  # no pooling config: the registry decides
    _pooling(tmp_path, pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    assert declared_pooling(tmp_path) == "cls"
    check_pooling(info, tmp_path)
    _pooling(tmp_path, pooling_mode_cls_token=False, pooling_mode_mean_tokens=True)
    with pytest.raises(ConfigError, match="the registry says cls pooling"):
        check_pooling(info, tmp_path)
    _pooling(tmp_path, pooling_mode_max_tokens=True)
    with pytest.raises(ConfigError, match="not supported"):
        declared_pooling(tmp_path)
