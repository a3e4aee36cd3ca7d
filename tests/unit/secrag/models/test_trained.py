"""Trained models as registered ones: their ids, their folders' models files, and the registry reading them."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from secrag.errors import ConfigError
from secrag.models.registry import DirectorySource, load_registry, model_info, registry
from secrag.models.trained import (
    int8_id,
    read_manifest,
    trained_folder,
    trained_folders,
    trained_id,
    write_models_file,
)
from secrag.settings import get_settings

BASE = "all-MiniLM-L6-v2"
RECIPE = {"steps": 600, "batch_size": 32, "learning_rate": 3e-5, "seed": 1337}
DIGEST = "ab" * 32


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A models folder of its own, as the process's settings name it (SECRAG_MODEL_CACHE_DIR)."""
    folder = tmp_path / "models"
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(folder))
    monkeypatch.delenv("SECRAG_MODELS_FILE", raising=False)
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


def _trained(models_dir: Path, model_id: str, base: str = BASE) -> Path:
    folder = trained_folder(models_dir, model_id)
    folder.mkdir(parents=True)
    write_models_file(folder, model_id, load_registry(None).get(base))
    return folder


def test_the_id_is_the_inputs_and_names_the_base_family() -> None:
    model_id = trained_id(BASE, RECIPE, DIGEST)
    assert re.fullmatch(r"attack-minilm-[0-9a-f]{10}", model_id)
    assert trained_id(BASE, dict(reversed(RECIPE.items())), DIGEST) == model_id  # canonical: key order is no input
    assert trained_id(BASE, {**RECIPE, "seed": 1}, DIGEST) != model_id
    assert trained_id(BASE, RECIPE, "cd" * 32) != model_id
    assert trained_id(f"{BASE}-int8", RECIPE, DIGEST) != model_id
    assert trained_id("bge-base-en-v1.5", RECIPE, DIGEST).startswith("attack-bge-")
    assert trained_id("all-base", RECIPE, DIGEST).startswith("attack-model-")  # no word of its own
    long = trained_id("x" * 64, RECIPE, DIGEST)
    assert long.startswith("attack-" + "x" * 20 + "-") and len(int8_id(long)) <= 64  # within the ids' pattern


def test_the_models_file_registers_the_folder_and_its_int8_export(models_dir: Path) -> None:
    model_id = trained_id("bge-base-en-v1.5", RECIPE, DIGEST)
    folder = _trained(models_dir, model_id, base="bge-base-en-v1.5")
    text = (folder / "models.yaml").read_text(encoding="utf-8")
    assert text.startswith("# Written by secrag") and "directory: ." in text
    models = registry()
    trained = models.get(model_id)
    bge = models.get("bge-base-en-v1.5")
    assert trained.source == DirectorySource(directory=str(folder.resolve()))  # `.` is the file's folder
    assert (trained.dimensions, trained.pooling, trained.max_tokens, trained.normalize) == (768, "cls", 512, True)
    assert (trained.query_prefix, trained.document_prefix) == (bge.query_prefix, bge.document_prefix)
    int8 = model_info(int8_id(model_id))
    assert int8.quantized_from == model_id and int8.source == trained.source


def test_a_bad_id_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"models\[0\]\.model\.id: String should match pattern") as caught:
        write_models_file(tmp_path, "a b", load_registry(None).get(BASE))
    assert str(tmp_path / "models.yaml") in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_only_complete_folders_count(models_dir: Path) -> None:
    assert trained_folders(models_dir) == []  # no trained folder at all
    second = _trained(models_dir, "attack-minilm-2222222222")
    first = _trained(models_dir, "attack-minilm-1111111111")
    (models_dir / "trained" / "attack-minilm-3333333333.partial").mkdir()  # a training still saving
    write_models_file(models_dir / "trained" / "attack-minilm-3333333333.partial", "partial", model_info(BASE))
    (models_dir / "trained" / "weights-only").mkdir()  # no models.yaml: not registered
    assert trained_folders(models_dir) == [first, second]
    assert {"attack-minilm-1111111111-int8", "attack-minilm-2222222222"} <= set(registry().ids())
    assert "partial" not in registry().ids()


def test_the_registry_follows_the_trained_folders(models_dir: Path) -> None:
    before = registry()
    assert [m for m in before.ids() if m.startswith("attack-")] == []
    folder = _trained(models_dir, "attack-minilm-1111111111")
    assert "attack-minilm-1111111111" in registry().ids()  # a new folder is read
    text = (folder / "models.yaml").read_text(encoding="utf-8")
    (folder / "models.yaml").write_text(text.replace("max_tokens: 256", "max_tokens: 128"), encoding="utf-8")
    os.utime(folder / "models.yaml", ns=(1, 1))  # another mtime, even on a coarse clock
    assert model_info("attack-minilm-1111111111").max_tokens == 128  # a changed file is read again
    (folder / "models.yaml").rename(folder / "models.yaml.off")
    assert "attack-minilm-1111111111" not in registry().ids()  # a folder without one is no model


def test_the_operator_file_comes_after_the_trained_ones(models_dir: Path, tmp_path: Path) -> None:
    _trained(models_dir, "attack-minilm-1111111111")
    operator = tmp_path / "operator.yaml"
    operator.write_text("models:\n  - {id: attack-minilm-1111111111, quantized_from: all-MiniLM-L6-v2}\n")
    with pytest.raises(ConfigError, match="attack-minilm-1111111111 is already registered") as caught:
        load_registry(operator, trained_folders(models_dir))
    assert str(operator) in str(caught.value)
    mine = tmp_path / "mine.yaml"
    mine.write_text("models:\n  - {id: mine-int8, quantized_from: attack-minilm-1111111111}\n")
    assert load_registry(mine, trained_folders(models_dir)).get("mine-int8").dimensions == 384


def test_a_broken_trained_models_file_names_itself(models_dir: Path) -> None:
    folder = _trained(models_dir, "attack-minilm-1111111111")
    path = folder / "models.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("pooling: mean", "pooling: max"), encoding="utf-8")
    with pytest.raises(ConfigError, match="pooling") as caught:
        registry()
    assert str(path) in str(caught.value) and str(folder) in caught.value.hint
    path.write_text("models: [\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML") as caught:
        model_info(BASE)
    assert str(path) in str(caught.value)


def test_two_folders_registering_one_id_are_refused(models_dir: Path) -> None:
    _trained(models_dir, "attack-minilm-1111111111")
    copy = trained_folder(models_dir, "attack-minilm-2222222222")
    copy.mkdir()
    write_models_file(copy, "attack-minilm-1111111111", model_info(BASE))  # a folder copied under a new name
    with pytest.raises(ConfigError, match="model attack-minilm-1111111111 is already registered") as caught:
        registry()
    assert str(copy / "models.yaml") in str(caught.value)


def test_the_manifest_is_read_when_present(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) is None
    (tmp_path / "training.json").write_text(json.dumps({"model_id": "m", "train_seconds": 12.5}))
    assert read_manifest(tmp_path) == {"model_id": "m", "train_seconds": 12.5}
    (tmp_path / "training.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a JSON object"):
        read_manifest(tmp_path)
    (tmp_path / "training.json").write_text("{")
    with pytest.raises(ConfigError, match=r"training\.json: cannot read the training manifest"):
        read_manifest(tmp_path)
