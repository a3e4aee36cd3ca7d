"""Trained models as registered ones: the id a training's inputs give it, and its folder under the models folder,
`<models dir>/trained/<id>/`: the sentence-transformers files, a models.yaml registering the model and its int8
export (read by the registry), and the trainer's manifest, training.json."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from secrag.errors import ConfigError, ParseError
from secrag.files import safe_json
from secrag.files.config_files import validate
from secrag.files.safe_files import UnsafeFile, read_capped
from secrag.models.registry import MODELS_FILE, TRAINED_DIR, ModelInfo, ModelsFile, trained_folders

__all__ = [
    "MANIFEST",
    "int8_id",
    "read_manifest",
    "trained_folder",
    "trained_folders",
    "trained_id",
    "write_models_file",
]

MANIFEST = "training.json"  # written by the trainer (pipeline/training): its inputs, figures and timings
MAX_MANIFEST_BYTES = 1024 * 1024
ID_PREFIX = "attack-"
DIGEST_CHARS = 10
_MAX_FAMILY = 20
# Words of a base model's id that say nothing of its family ("all-MiniLM-L6-v2" is a MiniLM).
_GENERIC = frozenset({"all", "sentence", "transformers", "model", "base", "small", "large", "en", "int8"})
_HEADER = (
    "# Written by secrag (secrag/models/trained.py): the model trained in this folder and its int8 export,\n"
    "# shaped like secrag/models/models.yaml. The registry reads it from this folder.\n"
)


def _family(base_model: str) -> str:
    """The base model's family as a slug: its id's first word with a letter that is not a generic one
    ("all-MiniLM-L6-v2" -> "minilm", "bge-base-en-v1.5" -> "bge")."""
    words = [w for w in re.split(r"[^a-z0-9]+", base_model.lower()) if w]
    named = next((w for w in words if re.search(r"[a-z]", w) and w not in _GENERIC), "model")
    return named[:_MAX_FAMILY]


def trained_id(base_model: str, recipe: dict[str, Any], data_digest: str) -> str:
    """The trained model's id, `attack-<family>-<10 hex>`: the hex from the sha256 of the base model, the recipe
    and the training data's digest as canonical JSON, so the same inputs always name the same model."""
    canonical = json.dumps(
        {"base_model": base_model, "recipe": recipe, "data_digest": data_digest},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    )
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:DIGEST_CHARS]
    return f"{ID_PREFIX}{_family(base_model)}-{digest}"


def int8_id(model_id: str) -> str:
    """The id of a trained model's int8 export, whose vectors serve."""
    return f"{model_id}-int8"


def trained_folder(models_dir: Path, model_id: str) -> Path:
    """Where the trained model `model_id` is kept."""
    return Path(models_dir) / TRAINED_DIR / model_id


def write_models_file(folder: Path, model_id: str, base: ModelInfo) -> Path:
    """Register the model saved in `folder`: a models.yaml naming it (`source: {directory: .}`, everything that
    shapes its vectors but the weights taken from `base`) and its int8 export. Checked as the registry checks
    it, then written atomically: the folder counts as a trained model once this file is there."""
    path = Path(folder) / MODELS_FILE
    entry: dict[str, Any] = {
        "id": model_id,
        "source": {"directory": "."},
        "pooling": base.pooling,
        "dimensions": base.dimensions,
        "max_tokens": base.max_tokens,
        "query_prefix": base.query_prefix,
        "document_prefix": base.document_prefix,
        "normalize": base.normalize,
    }
    data = {"models": [entry, {"id": int8_id(model_id), "quantized_from": model_id}]}
    validate(path, None, data, ModelsFile)  # ConfigError naming the file and the field
    work = path.with_name(f".{MODELS_FILE}.tmp")
    work.write_text(_HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    os.replace(work, path)
    return path


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The trainer's manifest (training.json) of a trained model's folder; None when there is none."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        return None
    try:
        data = safe_json.load(read_capped(path, MAX_MANIFEST_BYTES))
    except (UnsafeFile, ParseError) as exc:
        raise ConfigError(f"{path}: cannot read the training manifest: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the training manifest is not a JSON object")
    return data
