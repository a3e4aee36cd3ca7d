"""`secrag snapshot export`: the public part of a store into one tar file, each part a binary COPY stream
written to disk as it arrives (bounded memory), read in one repeatable-read transaction."""

from __future__ import annotations

import hashlib
import io
import logging
import tarfile
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import IsolationLevel

from secrag.db import database, migrations
from secrag.db.queries import Queries, one_row
from secrag.errors import SnapshotRefused
from secrag.models.onnx_export import model_digest
from secrag.models.registry import model_info
from secrag.version import version as secrag_version

from . import signature
from .manifest import MANIFEST, SIGNATURE, Manifest, ModelFacts, Part, SourceFacts
from .parts import PART_TABLES, PUBLIC, export_statement, public_statement, table_columns
from .trained_model import collect

log = logging.getLogger(__name__)
LOG_EVERY_BYTES = 256 * 1024 * 1024


def compressed(path: Path) -> bool:
    """A `.tar.gz` / `.tgz` name asks for gzip; anything else is a plain tar."""
    return path.name.endswith((".gz", ".tgz"))


def _export_part(conn: psycopg.Connection, q: Queries, table: str, models: list[str], folder: Path) -> Part:
    columns = table_columns(conn, q, table)
    member = f"parts/{table}.copy"
    digest, size, started, logged = hashlib.sha256(), 0, time.monotonic(), 0
    with (folder / f"{table}.copy").open("wb") as out, conn.cursor() as cur:
        with cur.copy(export_statement(q, table, columns), PUBLIC | {"models": models}) as copy:
            for block in copy:
                out.write(block)
                digest.update(block)
                size += len(block)
                if size - logged >= LOG_EVERY_BYTES:
                    logged = size
                    log.info("snapshot export: %s %d MiB so far", table, size >> 20)
        rows = cur.rowcount
    log.info(
        "snapshot export: %s, %d rows, %d bytes in %.1fs",
        table,
        rows,
        size,
        time.monotonic() - started,
        extra={"table": table, "rows": rows, "bytes": size},
    )
    return Part(table, member, columns, rows, size, digest.hexdigest())


def _active_model(conn: psycopg.Connection, q: Queries, models_dir: Path) -> ModelFacts:
    row = conn.execute(q.active_model).fetchone()
    if row is None:
        raise SnapshotRefused("the store has no active embedding model; nothing to export yet")
    model_id, dimensions = str(row[0]), int(row[1])
    return ModelFacts(model_id, model_digest(model_info(model_id), models_dir), dimensions)


@dataclass(frozen=True)
class LeftOut:
    """The documents an export left out, by reason: of user folders, one-time documents (`secrag ingest`), and
    documents of other sources with a tenant, users or groups."""

    user_folders: int
    one_time: int
    restricted: int

    @property
    def total(self) -> int:
        return self.user_folders + self.one_time + self.restricted


@dataclass(frozen=True)
class Exported:
    """What an export wrote (its manifest) and what it left out."""

    manifest: Manifest
    left_out: LeftOut


def read_store(url: str, sql_dir: Path, models_dir: Path, folder: Path) -> Exported:
    """Write every part of the store at `url` into `folder`; the manifest describing them, and what was left out."""
    q = Queries(sql_dir, "snapshot")
    with database.connect(url) as conn:
        conn.isolation_level = IsolationLevel.REPEATABLE_READ  # one consistent view of every part
        conn.read_only = True
        with conn.transaction():
            schema = migrations.current_version(conn, sql_dir)
            if schema != migrations.latest_version(sql_dir):
                raise SnapshotRefused(
                    f"the store is at schema version {schema}, this secrag at {migrations.latest_version(sql_dir)}",
                    hint="run `secrag db migrate` first",
                )
            model = _active_model(conn, q, models_dir)
            trained = collect(conn, sql_dir, models_dir, folder)
            models = [model.id, *([trained.served_model] if trained else [])]
            parts = tuple(_export_part(conn, q, table, models, folder) for table in PART_TABLES)
            sources = tuple(
                SourceFacts(str(name), version, int(docs), int(chunks))
                for name, version, docs, chunks in conn.execute(public_statement(q, q.source_summary), PUBLIC)
            )
            left_out = LeftOut(*(int(n) for n in one_row(conn.execute(q.left_out, PUBLIC))))
            server = int(one_row(conn.execute("SHOW server_version_num"))[0])
    manifest = Manifest(
        schema_version=schema,
        model=model,
        sources=sources,
        parts=parts,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        secrag_version=secrag_version(),
        server_version=server,
        trained=trained,
    )
    return Exported(manifest, left_out)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(mtime), 0o644
    tar.addfile(info, io.BytesIO(data))


def export_snapshot(url: str, sql_dir: Path, models_dir: Path, target: Path, sign_key: Path | None = None) -> Exported:
    """Write the snapshot of the store at `url` to `target` (atomically: a partial file never stays behind);
    signed with the ed25519 key in `sign_key` (PEM) when given."""
    started = time.monotonic()
    target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".snapshot-", dir=target.parent) as tmp:
        folder = Path(tmp)
        exported = read_store(url, sql_dir, models_dir, folder)
        manifest = exported.manifest
        data = manifest.to_bytes()
        partial = folder / "snapshot.tar"
        now = time.time()
        tar_file = tarfile.open(partial, "w:gz", compresslevel=1) if compressed(target) else tarfile.open(partial, "w")
        with tar_file as tar:
            _add_bytes(tar, MANIFEST, data, now)
            if sign_key is not None:
                _add_bytes(tar, SIGNATURE, signature.sign(data, sign_key), now)
            for part in manifest.parts:
                info = tar.gettarinfo(str(folder / f"{part.table}.copy"), arcname=part.member)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with (folder / f"{part.table}.copy").open("rb") as fh:
                    tar.addfile(info, fh)
            for file in manifest.trained.files if manifest.trained else ():
                info = tar.gettarinfo(str(folder / file.member), arcname=file.member)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with (folder / file.member).open("rb") as fh:
                    tar.addfile(info, fh)
        partial.replace(target)
    log.info(
        "snapshot written to %s: %d bytes, %d sources, %d chunks, model %s, in %.1fs; %d documents that are not "
        "public left out",
        target,
        target.stat().st_size,
        len(manifest.sources),
        manifest.rows()["chunks"],
        manifest.model.id,
        time.monotonic() - started,
        exported.left_out.total,
    )
    return exported
