"""The verifier kept beside the served sentence model (`<models dir>/trained/<id>/verifier.json`, written by the
pipeline's training: secrag/mapping/verifier.py), read once per model and file change. None when the model has
none (it did not pass its gate, or is not trained yet) or it cannot be read (logged; the selector serves)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from secrag.errors import ConfigError
from secrag.mapping.verifier import VERIFIER_FILE, Verifier, read_verifier
from secrag.models.registry import model_info
from secrag.models.trained import trained_folder
from secrag.settings import get_settings

log = logging.getLogger(__name__)

_READ: dict[str, tuple[float, Verifier | None]] = {}
_LOCK = threading.Lock()


def folder_of(model_id: str, models_dir: Path | None = None) -> Path:
    """The trained folder of a served sentence model (its int8 export's id names the fp32 model's folder)."""
    try:
        trained = model_info(model_id).quantized_from or model_id
    except ConfigError:
        trained = model_id.removesuffix("-int8")
    return trained_folder(models_dir or get_settings().models_dir, trained)


def verifier_stamp(model_id: str, models_dir: Path | None = None) -> str:
    """The served sentence model's verifier file's change time, "" when it has none."""
    try:
        return str((folder_of(model_id, models_dir) / VERIFIER_FILE).stat().st_mtime_ns)
    except OSError:
        return ""


def verifier_of(model_id: str, models_dir: Path | None = None) -> Verifier | None:
    """The served sentence model's verifier, or None."""
    path = folder_of(model_id, models_dir) / VERIFIER_FILE
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return None
    with _LOCK:
        cached = _READ.get(model_id)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        verifier = read_verifier(path.parent)
    except ConfigError:
        log.exception("cannot read the map's verifier of %s; the selector serves", model_id)
        verifier = None
    if verifier is not None and verifier.model != model_id:
        log.warning("the verifier in %s was trained for %s, not %s: not used", path, verifier.model, model_id)
        verifier = None
    with _LOCK:
        _READ[model_id] = (stamp, verifier)
    return verifier
