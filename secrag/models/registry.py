"""The embedding models secrag may use, as data: the packaged registry (secrag/models/models.yaml), the models
the pipeline trained (`<models dir>/trained/<id>/models.yaml`, secrag/models/trained.py) and the operator's
models file (SECRAG_MODELS_FILE), one entry per model id (the id stored with its vectors)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Annotated, Any, Literal

import yaml
from pydantic import Discriminator, Field, StringConstraints, Tag, field_validator

from secrag.errors import ConfigError
from secrag.files.config_files import ConfigModel, FieldError, located, read_mapping, validate
from secrag.files.package_data import package_path
from secrag.settings import get_settings

Pooling = Literal["mean", "cls"]
ModelId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
# What the ONNX export and the encoders read of a hub model's files.
REQUIRED_HUB_FILES = ("config.json", "model.safetensors", "tokenizer.json")
MAX_DIMENSIONS = 2000  # pgvector's HNSW index on `vector` takes at most 2,000 dimensions
MODELS_FILE = "models.yaml"  # the name of a models file in a model's folder
TRAINED_DIR = "trained"  # <models dir>/trained/<model id>/: a trained model's folder (secrag/models/trained.py)
PARTIAL = ".partial"  # the suffix of a folder still being written (renamed to its id when complete)
_TRAINED_HINT = "a trained model's folder: mend its models.yaml or move {folder} out of the trained models' folder"


class PackageSource(ConfigModel):
    """Weights shipped in a pip package: the folder its `get_model_path()` returns (site-packages)."""

    package: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


class DirectorySource(ConfigModel):
    """A sentence-transformers model folder on this machine (relative: to the models file's folder)."""

    directory: str = Field(min_length=1)


class HubSource(ConfigModel):
    """A hub repository at one commit; `secrag models fetch` downloads the listed files and checks each
    against its sha256 (a file without one is not pinned yet, and is not fetched)."""

    hub: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
    revision: str = Field(pattern=r"^[0-9a-f]{40}$")
    files: dict[str, Sha256 | None]

    @field_validator("files")
    @classmethod
    def _relative_names(cls, files: dict[str, str | None]) -> dict[str, str | None]:
        for name in files:
            parts = PurePosixPath(name).parts
            if name.startswith("/") or not parts or any(p in ("", ".", "..") for p in parts) or "\\" in name:
                raise FieldError((name,), "a file is a relative path inside the repository")
        missing = [name for name in REQUIRED_HUB_FILES if name not in files]
        if missing:
            raise FieldError((), f"the files must include {', '.join(missing)}")
        return files


def _source_kind(value: Any) -> str | None:  # noqa: ANN401 - pydantic hands over the raw value
    if isinstance(value, Mapping):
        return next((kind for kind in ("package", "directory", "hub") if kind in value), None)
    return next((kind for kind in ("package", "directory", "hub") if hasattr(value, kind)), None)


Source = Annotated[
    Annotated[PackageSource, Tag("package")]
    | Annotated[DirectorySource, Tag("directory")]
    | Annotated[HubSource, Tag("hub")],
    Discriminator(
        _source_kind,
        custom_error_type="source_kind",
        custom_error_message="a source is {package: ...}, {directory: ...} or {hub: ..., revision: ..., files: ...}",
    ),
]


class ModelEntry(ConfigModel):
    """A model with weights of its own."""

    id: ModelId
    source: Source
    pooling: Pooling
    dimensions: int = Field(ge=1, le=MAX_DIMENSIONS)
    max_tokens: int = Field(ge=8, le=8192)
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True


class QuantizedEntry(ConfigModel):
    """The int8 ONNX model made from another entry's weights: everything but its id comes from that one."""

    id: ModelId
    quantized_from: ModelId


def _entry_kind(value: Any) -> str:  # noqa: ANN401 - pydantic hands over the raw value
    has = "quantized_from" in value if isinstance(value, Mapping) else hasattr(value, "quantized_from")
    return "int8" if has else "model"


Entry = Annotated[
    Annotated[ModelEntry, Tag("model")] | Annotated[QuantizedEntry, Tag("int8")], Discriminator(_entry_kind)
]


class ModelsFile(ConfigModel):
    """secrag/models/models.yaml, or an operator's models file, as written."""

    models: list[Entry] = Field(default_factory=list)


@dataclass(frozen=True)
class ModelInfo:
    """A registered model, its int8 entry resolved: the facts every encoder and the export read."""

    model_id: str
    dimensions: int
    source: PackageSource | DirectorySource | HubSource  # a directory's path is absolute here
    pooling: Pooling
    max_tokens: int
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True
    quantized_from: str | None = None  # the model this int8 model is made from

    def queries(self, texts: list[str]) -> list[str]:
        """The texts to encode for these queries (the model's query prefix before each)."""
        return [self.query_prefix + t for t in texts] if self.query_prefix else texts

    def documents(self, texts: list[str]) -> list[str]:
        """The texts to encode for these chunks (the model's document prefix before each)."""
        return [self.document_prefix + t for t in texts] if self.document_prefix else texts


@dataclass(frozen=True)
class ModelRegistry:
    """The known models by id."""

    models: Mapping[str, ModelInfo]

    def ids(self) -> list[str]:
        return sorted(self.models)

    def get(self, model_id: str) -> ModelInfo:
        """The model, or ConfigError listing the known ones."""
        try:
            return self.models[model_id]
        except KeyError:
            raise ConfigError(
                f"embedding model {model_id!r} is not in the model registry",
                hint=f"choose one of: {', '.join(self.ids())}, or add it to SECRAG_MODELS_FILE",
            ) from None


@dataclass(frozen=True)
class _Read:
    path: Path
    node: yaml.Node | None
    entries: list[ModelEntry | QuantizedEntry]

    def where(self, index: int, field: str, message: str) -> str:
        return located(self.path, self.node, ("models", index, field), message)


def _read(path: Path) -> _Read:
    data, node = read_mapping(path)
    return _Read(path, node, list(validate(path, node, data, ModelsFile).models))


def _resolved_source(entry: ModelEntry, folder: Path) -> PackageSource | DirectorySource | HubSource:
    if isinstance(entry.source, DirectorySource):
        return DirectorySource(directory=str((folder / Path(entry.source.directory).expanduser()).resolve()))
    return entry.source


def _merge(files: list[_Read]) -> ModelRegistry:
    full: dict[str, ModelInfo] = {}
    int8: list[tuple[_Read, int, QuantizedEntry]] = []
    seen: dict[str, str] = {}
    for read in files:
        for index, entry in enumerate(read.entries):
            if entry.id in seen:
                raise ConfigError(read.where(index, "id", f"model {entry.id} is already registered ({seen[entry.id]})"))
            seen[entry.id] = str(read.path)
            if isinstance(entry, QuantizedEntry):
                int8.append((read, index, entry))
                continue
            full[entry.id] = ModelInfo(
                model_id=entry.id,
                dimensions=entry.dimensions,
                source=_resolved_source(entry, read.path.parent),
                pooling=entry.pooling,
                max_tokens=entry.max_tokens,
                query_prefix=entry.query_prefix,
                document_prefix=entry.document_prefix,
                normalize=entry.normalize,
            )
    models = dict(full)
    for read, index, entry in int8:
        base = full.get(entry.quantized_from)
        if base is None:
            known = ", ".join(sorted(full))
            raise ConfigError(
                read.where(index, "quantized_from", f"{entry.quantized_from} is no model with weights; known: {known}")
            )
        models[entry.id] = replace(base, model_id=entry.id, quantized_from=base.model_id)
    return ModelRegistry(MappingProxyType(models))


def packaged_models_file() -> Path:
    """secrag/models/models.yaml, shipped in the package."""
    return package_path("secrag.models", MODELS_FILE)


def trained_folders(models_dir: Path) -> list[Path]:
    """The trained models' folders, `<models_dir>/trained/<id>/`, sorted by name: those holding a models.yaml
    (a `.partial` folder is one still being written)."""
    root = Path(models_dir) / TRAINED_DIR
    try:
        entries = list(root.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise ConfigError(f"{root}: cannot list the trained models: {exc.strerror or exc}") from exc
    kept = [p for p in entries if not p.name.endswith(PARTIAL) and (p / MODELS_FILE).is_file()]
    return sorted(kept, key=lambda p: p.name)


@lru_cache(maxsize=4)
def _load(models_file: Path | None, trained: tuple[Path, ...], _stamps: tuple[tuple[int, int], ...]) -> ModelRegistry:
    files = [_read(packaged_models_file()), *(_read_trained(path) for path in trained)]
    if models_file is not None:
        files.append(_read(models_file))
    return _merge(files)


def _read_trained(path: Path) -> _Read:
    try:
        return _read(path)
    except ConfigError as exc:
        raise ConfigError(str(exc), hint=_TRAINED_HINT.format(folder=path.parent)) from exc


def _stamp(path: Path, hint: str) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the models file: {exc.strerror or exc}", hint=hint) from exc
    return (info.st_mtime_ns, info.st_size)


def load_registry(models_file: Path | None, trained: Sequence[Path] = ()) -> ModelRegistry:
    """The packaged models, those of the `trained` folders' models files (in this order) and those of
    `models_file`; read again when any of these files changes, or the folders do."""
    files = tuple(Path(folder) / MODELS_FILE for folder in trained)
    stamps = [_stamp(path, _TRAINED_HINT.format(folder=path.parent)) for path in files]
    if models_file is not None:
        stamps.append(_stamp(models_file, "check SECRAG_MODELS_FILE"))
    return _load(models_file, files, tuple(stamps))


def registry() -> ModelRegistry:
    """The process's registry: the packaged models, the trained ones in the models folder
    (SECRAG_MODEL_CACHE_DIR) and SECRAG_MODELS_FILE's."""
    settings = get_settings()
    return load_registry(settings.models_file, trained_folders(settings.models_dir))


def model_info(model_id: str) -> ModelInfo:
    """The registered model, or ConfigError listing the known ones."""
    return registry().get(model_id)
