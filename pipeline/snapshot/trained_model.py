"""The promoted sentence model in a snapshot: export copies its trained folder's files and its int8 ONNX export
(hashed as they are copied) and describes them with its trained_models row; import stages each file as it
streams (hashed again), checks the weights are those the int8 export was made from, installs the folder and the
export where the registry and the encoders look (`<models dir>/trained/<id>/`, `<models dir>/<export name>`),
records the row with its gate figures and promotes it when its vectors cover the sentence path's chunks."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import IO

import psycopg
from psycopg.types.json import Jsonb

from pipeline.training import promotion
from secrag.db.queries import Queries
from secrag.errors import ConfigError, PromotionRefused, SnapshotRefused
from secrag.models.onnx_export import export_onnx, file_sha256, model_digest
from secrag.models.registry import MODELS_FILE, PARTIAL, DirectorySource, ModelInfo, model_info
from secrag.models.trained import trained_folder, write_models_file

from .reading import BLOCK
from .trained_facts import RECORD_FIELDS, FileKind, ModelFile, TrainedFacts, member_name

log = logging.getLogger(__name__)
STAGED_EXPORT = "int8.onnx"  # the int8 export's name in the staging folder


def _copy_hashed(source: Path, target: Path) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with source.open("rb") as src, target.open("wb") as out:
        for block in iter(lambda: src.read(BLOCK), b""):
            out.write(block)
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def _weights_files(folder: Path) -> list[str]:
    """The trained folder's files to carry, as relative paths: every regular file but its models.yaml (the
    import writes its own) and hidden ones."""
    paths = [p for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()]
    relative = [p.relative_to(folder).as_posix() for p in paths]
    return [r for r in relative if r != MODELS_FILE and not any(part.startswith(".") for part in r.split("/"))]


def collect(conn: psycopg.Connection, sql_dir: Path, models_dir: Path, work: Path) -> TrainedFacts | None:
    """The promoted sentence model's facts, its files copied into `work` (None: the general model serves the
    sentence path). SnapshotRefused when its folder is not on this machine."""
    row = promotion.promoted(conn, sql_dir)
    if row is None:
        return None
    folder = trained_folder(models_dir, row.model_id)
    if not folder.is_dir():
        raise SnapshotRefused(
            f"the promoted sentence model {row.model_id} has no folder here ({folder}): a snapshot carries it",
            hint="export on the machine that trained it (SECRAG_MODEL_CACHE_DIR), or `secrag models rollback`",
        )
    files: list[ModelFile] = []

    def add(kind: FileKind, path: str, source: Path) -> None:
        member = member_name(row.model_id, kind, path)
        size, sha = _copy_hashed(source, work / member)
        files.append(ModelFile(kind, path, member, size, sha))

    for path in _weights_files(folder):
        add("weights", path, folder / path)
    export = export_onnx(row.served_model, models_dir)  # made once per weights; reused when intact
    add("int8", export.name, export)
    record = {
        "replaces": row.replaces,
        "attack_version": row.attack_version,
        "data_digest": row.data_digest,
        "recipe": dict(row.recipe),
        "validation": dict(row.validation),
        "baseline": dict(row.baseline),
        "passed": row.passed,
        "trained_at": row.trained_at.isoformat() if row.trained_at else None,
        "train_seconds": row.train_seconds,
    }
    assert set(record) == set(RECORD_FIELDS)
    dimensions = model_info(row.served_model).dimensions
    return TrainedFacts(row.model_id, row.served_model, row.base_model, dimensions, record, tuple(files))


def staging_folder(models_dir: Path, facts: TrainedFacts) -> Path:
    """A new folder beside the trained models' to stage the files in (its name ends in .partial: the registry
    never reads it)."""
    root = trained_folder(models_dir, facts.model_id).parent
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".{facts.model_id}.snapshot-{os.getpid()}{PARTIAL}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    return staging


def stage(file: ModelFile, stream: IO[bytes], staging: Path) -> None:
    """Write the file's bytes under `staging` (weights/<path>, or int8.onnx), hashed again as they go."""
    target = staging / ("weights" / Path(file.path) if file.kind == "weights" else Path(STAGED_EXPORT))
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for block in iter(lambda: stream.read(BLOCK), b""):
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != file.sha256:
        raise SnapshotRefused(f"the snapshot's {file.member} changed while it was imported; nothing was imported")
    target.chmod(0o644)


def _served_info(facts: TrainedFacts, folder: Path) -> ModelInfo:
    """The int8 model as the registry will know it once the folder is installed (the base model's shape, the
    folder's weights)."""
    try:
        base = model_info(facts.base_model)
    except ConfigError as exc:
        raise SnapshotRefused(
            f"the snapshot's sentence model {facts.model_id} was trained from {facts.base_model}, which this "
            "machine does not register",
            hint="import with the same model registry (SECRAG_MODELS_FILE) as the exporting machine",
        ) from exc
    if base.dimensions != facts.dimensions:
        raise SnapshotRefused(
            f"the snapshot's sentence model {facts.model_id} has {facts.dimensions} dimensions; its base "
            f"{facts.base_model} has {base.dimensions} here"
        )
    return replace(
        base, model_id=facts.served_model, source=DirectorySource(directory=str(folder)), quantized_from=facts.model_id
    )


def _same_weights(folder: Path, facts: TrainedFacts) -> bool:
    weights = [f for f in facts.files if f.kind == "weights"]
    return all((folder / f.path).is_file() and file_sha256(folder / f.path) == f.sha256 for f in weights)


def install(facts: TrainedFacts, staging: Path, models_dir: Path) -> Path:
    """Move the staged model where the registry and the encoders find it; its folder. SnapshotRefused (nothing
    installed) when the int8 export is not made from these weights, or another model of its id is here."""
    try:
        digest = model_digest(_served_info(facts, staging / "weights"), models_dir)
    except ConfigError as exc:
        raise SnapshotRefused(f"the snapshot's sentence model {facts.model_id} is incomplete: {exc}") from exc
    expected = f"{facts.served_model}-{digest}.onnx"
    if facts.export.path != expected:
        raise SnapshotRefused(
            f"the snapshot's int8 export {facts.export.path} is not made from its weights (expected {expected})"
        )
    folder = trained_folder(models_dir, facts.model_id)
    if folder.exists():
        if not _same_weights(folder, facts):
            raise SnapshotRefused(
                f"{folder} holds another model of the id {facts.model_id}; nothing was imported",
                hint="move that folder aside, or import on a machine without it",
            )
    else:
        (staging / "weights").rename(folder)
    write_models_file(folder, facts.model_id, _served_info(facts, folder))
    target = Path(models_dir) / expected
    os.replace(staging / STAGED_EXPORT, target)
    (target.with_name(target.name + ".sha256")).write_text(facts.export.sha256, encoding="ascii")
    log.info("snapshot import: sentence model %s installed in %s", facts.model_id, folder)
    return folder


def register(conn: psycopg.Connection, sql_dir: Path, facts: TrainedFacts) -> bool:
    """Record the model with its lineage and gate figures, and promote it (as the exporting store served it)
    when its vectors cover the sentence path's chunks, promote's own check; whether it serves."""
    record = facts.record
    conn.execute(
        Queries(sql_dir, "snapshot").insert_trained_model,
        {
            **record,
            "model_id": facts.model_id,
            "served_model": facts.served_model,
            "base_model": facts.base_model,
            "recipe": Jsonb(record["recipe"]),
            "validation": Jsonb(record["validation"]),
            "baseline": Jsonb(record["baseline"]),
        },
    )
    try:
        # Forced past its gate only: the exporting store served it, so its gate (or its operator) let it.
        return promotion.promote(conn, sql_dir, facts.model_id, force=True).promoted == facts.model_id
    except PromotionRefused as exc:
        log.warning("snapshot import: sentence model %s recorded, not promoted: %s", facts.model_id, exc)
        return False
