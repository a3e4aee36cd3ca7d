"""What a snapshot says of the promoted sentence model it carries: its ids, dimensions, its trained_models row
(lineage and gate figures) and its files (the trained folder's weights and tokenizer, and the int8 ONNX export),
each with its tar member, bytes and sha256; parsed with every name checked, so no member can name a path outside
the models folder."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

from secrag.errors import SnapshotRefused
from secrag.models.registry import MODELS_FILE, TRAINED_DIR
from secrag.models.trained import int8_id

MAX_FILES = 64  # a sentence-transformers folder holds about a dozen
MAX_PATH = 200
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")  # the registry's ModelId
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
FileKind = Literal["weights", "int8"]
RECORD_FIELDS = {  # the trained_models columns a snapshot carries, and their JSON types
    "replaces": (str, type(None)),
    "attack_version": (str, type(None)),
    "data_digest": (str,),
    "recipe": (dict,),
    "validation": (dict,),
    "baseline": (dict,),
    "passed": (bool,),
    "trained_at": (str,),
    "train_seconds": (int, float, type(None)),
}


@dataclass(frozen=True)
class ModelFile:
    """One file of the trained model: `path` inside its folder (weights) or the int8 export's file name."""

    kind: FileKind
    path: str
    member: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class TrainedFacts:
    """The promoted sentence model a snapshot carries (its vectors are in the embeddings part)."""

    model_id: str
    served_model: str
    base_model: str
    dimensions: int
    record: dict[str, Any]  # RECORD_FIELDS of its trained_models row: lineage and gate figures
    files: tuple[ModelFile, ...]

    @property
    def export(self) -> ModelFile:
        return next(f for f in self.files if f.kind == "int8")


def member_name(model_id: str, kind: FileKind, path: str) -> str:
    """The tar member of a model file: `models/trained/<id>/<path>`, or `models/<export name>`."""
    return f"models/{TRAINED_DIR}/{model_id}/{path}" if kind == "weights" else f"models/{path}"


def export_name_pattern(served_model: str) -> re.Pattern[str]:
    """The int8 export's file name (secrag/models/onnx_export.py onnx_path): `<served id>-<12 hex>.onnx`."""
    return re.compile(rf"^{re.escape(served_model)}-[0-9a-f]{{12}}\.onnx$")


def _damaged(what: str) -> SnapshotRefused:
    return SnapshotRefused(f"the snapshot's manifest is damaged: trained.{what}")


def _safe_path(path: object) -> str:
    """A relative POSIX path of plain names (no `..`, no absolute path, no backslash): one that stays inside the
    model's folder."""
    if not isinstance(path, str) or not 0 < len(path) <= MAX_PATH:
        raise _damaged("files: a path is missing or too long")
    parts = PurePosixPath(path).parts
    if path.startswith("/") or "\\" in path or not parts or not all(_PART.match(p) and p != ".." for p in parts):
        raise _damaged(f"files: {path[:80]!r} is not a relative path inside the model's folder")
    if str(PurePosixPath(*parts)) != path:
        raise _damaged(f"files: {path[:80]!r} is not in its plain form")
    return path


def _file(raw: object, model_id: str, served: str) -> ModelFile:
    if not isinstance(raw, dict):
        raise _damaged("files: an entry is not an object")
    kind, size, sha = raw.get("kind"), raw.get("bytes"), raw.get("sha256")
    if kind not in ("weights", "int8") or not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise _damaged("files: an entry's kind or bytes")
    if not isinstance(sha, str) or not _SHA256.match(sha):
        raise _damaged("files: an entry's sha256 is not a sha256")
    path = _safe_path(raw.get("path"))
    if kind == "weights" and path == MODELS_FILE:
        raise _damaged(f"files: {MODELS_FILE} is written by the import, never carried")
    if kind == "int8" and not export_name_pattern(served).match(path):
        raise _damaged(f"files: {path[:80]!r} is not the int8 export of {served}")
    member = member_name(model_id, kind, path)
    if raw.get("member") != member:
        raise _damaged(f"files: {path[:80]!r} is not stored as {member}")
    return ModelFile(kind, path, member, size, sha)


def parse_trained(raw: object) -> TrainedFacts | None:
    """The trained model of a manifest's `trained` (None: the snapshot carries none); SnapshotRefused when damaged."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _damaged("trained is not an object")
    model_id, served, base = raw.get("model_id"), raw.get("served_model"), raw.get("base_model")
    if not all(isinstance(v, str) and _MODEL_ID.match(v) for v in (model_id, served, base)):
        raise _damaged("model_id, served_model or base_model is not a model id")
    assert isinstance(model_id, str) and isinstance(served, str) and isinstance(base, str)
    if served != int8_id(model_id):
        raise _damaged(f"served_model {served} is not {int8_id(model_id)}")
    dimensions = raw.get("dimensions")
    if not isinstance(dimensions, int) or isinstance(dimensions, bool) or dimensions < 1:
        raise _damaged("dimensions")
    record = raw.get("record")
    if not isinstance(record, dict) or set(record) != set(RECORD_FIELDS):
        raise _damaged(f"record holds other fields than {', '.join(sorted(RECORD_FIELDS))}")
    for name, kinds in RECORD_FIELDS.items():
        if not isinstance(record[name], kinds) or (isinstance(record[name], bool) and bool not in kinds):
            raise _damaged(f"record.{name} is of the wrong type")
    files = raw.get("files")
    if not isinstance(files, list) or not 0 < len(files) <= MAX_FILES:
        raise _damaged(f"files: from 1 to {MAX_FILES} files")
    parsed = tuple(_file(f, model_id, served) for f in files)
    if len({f.member for f in parsed}) != len(parsed) or [f.kind for f in parsed].count("int8") != 1:
        raise _damaged("files: a file twice, or not one int8 export")
    return TrainedFacts(model_id, served, base, dimensions, dict(record), parsed)
