"""`secrag snapshot import`: a verified snapshot of public rows loaded into a store in one transaction, or
nothing at all.

Checked before a row is written: the signature (when the operator set a public key), the sizes the parts
declare, the schema version and every part's columns, the model (the configured one, with the same weights),
then every part's sha256. Then, in one transaction, into a store with no public documents (a fresh one; user
folders are never touched) that holds no publish newer than the snapshot: the parts by binary COPY, the
store's triggers deriving chunk vectors, document accesses and technique documents; every row written checked
public (no tenant, users or groups, no user folder's or one-time document's source: a snapshot never puts a
row into a private view); the counts, the model's HNSW index and its activation. The promoted sentence model a
snapshot carries (pipeline/snapshot/trained_model.py) is installed in the models folder, recorded with its gate
figures and promoted when its vectors cover the sentence path's chunks. Each source's last published attempt
comes with its fingerprint, so the pipeline's next refresh of a source whose upstream has not moved finds it
unchanged (pipeline/refresh.py) and only the others are fetched and published again.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psycopg
from psycopg import sql

from secrag.db import migrations
from secrag.db.queries import Queries, one_row
from secrag.errors import SnapshotRefused
from secrag.models.onnx_export import model_digest
from secrag.models.registry import model_info
from secrag.settings import get_settings

from ..activation import activate_model_if_complete
from ..model_store import ensure_model_index
from ..store.counts import refresh_all_counts
from .manifest import Manifest, ModelFacts, Part
from .parts import PUBLIC, column_list, import_statement, public_statement, table_columns
from .reading import BLOCK, MAX_BYTES, UNREADABLE, Header, part_streams, read_header, verify_parts
from .trained_model import install, register, stage, staging_folder

log = logging.getLogger(__name__)
INDEX_MEMORY = "512MB"
LOG_EVERY_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Imported:
    """What an import loaded."""

    manifest: Manifest
    rows: dict[str, int]
    signed: bool
    active_model: str | None
    seconds: float
    sentence_model: str | None = None  # the trained model serving the sentence path after the import


def local_model(model_id: str, models_dir: Path) -> ModelFacts:
    """The facts of a model as this machine has it (ConfigError when it is unknown or its weights are absent)."""
    info = model_info(model_id)
    return ModelFacts(model_id, model_digest(info, models_dir), info.dimensions)


def check_schema(manifest: Manifest, version: int, holder: str) -> None:
    """SnapshotRefused unless the snapshot is of schema `version` (that of `holder`: a store, or this release)."""
    if manifest.schema_version != version:
        raise SnapshotRefused(
            f"the snapshot is of schema version {manifest.schema_version}; {holder} is at {version}",
            hint="import it with the secrag release that exported it, or export a snapshot with this one",
        )


def check_model(manifest: Manifest, model: ModelFacts) -> None:
    """SnapshotRefused unless the snapshot's vectors are of `model`, with the same weights and dimensions."""
    theirs = manifest.model
    if theirs.id != model.id:
        raise SnapshotRefused(
            f"the snapshot holds vectors of model {theirs.id}; this store embeds with {model.id}",
            hint=f"set SECRAG_EMBEDDING_MODEL={theirs.id}, or use a snapshot of {model.id}",
        )
    if theirs.digest != model.digest or theirs.dimensions != model.dimensions:
        raise SnapshotRefused(
            f"the snapshot's model {theirs.id} has weights {theirs.digest} ({theirs.dimensions} dimensions); "
            f"this machine's has {model.digest} ({model.dimensions}): its vectors would not match the queries'",
            hint="install the same weights, or export a snapshot on a machine with these",
        )


def check_compatible(conn: psycopg.Connection, sql_dir: Path, manifest: Manifest, model: ModelFacts) -> None:
    """SnapshotRefused unless the store's schema, each part's columns and the model are the snapshot's."""
    q = Queries(sql_dir, "snapshot")
    check_schema(manifest, migrations.current_version(conn, sql_dir), "this store")
    for part in manifest.parts:
        if table_columns(conn, q, part.table) != part.columns:
            raise SnapshotRefused(f"the snapshot's {part.table} columns differ from this store's")
    check_model(manifest, model)
    row = conn.execute(q.model_dimensions, {"model": model.id}).fetchone()
    if row is not None and int(row[0]) != model.dimensions:
        raise SnapshotRefused(f"this store records model {model.id} with {row[0]} dimensions, not {model.dimensions}")


def verify_snapshot(
    path: Path, sql_dir: Path, model: ModelFacts, public_key: str | None = None, max_bytes: int = MAX_BYTES
) -> Header:
    """Every check an import makes that needs no store (signature, declared sizes, this release's schema
    version, the model, every part's sha256): SnapshotRefused at the first that fails. An image build bakes a
    snapshot in only after this (deploy/Dockerfile)."""
    header = read_header(path, public_key, max_bytes)
    check_schema(header.manifest, migrations.latest_version(sql_dir), "this release")
    check_model(header.manifest, model)
    verify_parts(path, header)
    return header


def _copy(cur: psycopg.Cursor, statement: sql.Composed, part: Part, stream: IO[bytes]) -> int:
    """COPY the part's bytes in; its rows. The bytes are hashed again as they go (the file may have changed
    since it was verified)."""
    digest, done, started, logged = hashlib.sha256(), 0, time.monotonic(), 0
    with cur.copy(statement) as copy:
        for block in iter(lambda: stream.read(BLOCK), b""):
            digest.update(block)
            copy.write(block)
            done += len(block)
            if done - logged >= LOG_EVERY_BYTES:
                logged = done
                log.info("snapshot import: %s %d of %d MiB", part.table, done >> 20, part.bytes >> 20)
    if digest.hexdigest() != part.sha256:
        raise SnapshotRefused(f"the snapshot's {part.member} changed while it was imported; nothing was imported")
    log.info(
        "snapshot import: %s, %d rows, %d bytes in %.1fs",
        part.table,
        cur.rowcount,
        done,
        time.monotonic() - started,
        extra={"table": part.table, "rows": cur.rowcount},
    )
    return int(cur.rowcount)


def _check_vector_models(conn: psycopg.Connection, q: Queries, manifest: Manifest) -> None:
    models = [manifest.model.id, *([manifest.trained.served_model] if manifest.trained else [])]
    row = conn.execute(q.staged_other_model, {"models": models}).fetchone()
    if row is not None:
        raise SnapshotRefused(
            f"the snapshot's parts/embeddings.copy holds {row[1]} vectors of model {row[0]}, which its manifest "
            "does not name; nothing was imported"
        )


def _load_part(conn: psycopg.Connection, q: Queries, manifest: Manifest, part: Part, stream: IO[bytes]) -> int:
    with conn.cursor() as cur:
        if part.table != "embeddings":
            loaded = _copy(cur, import_statement(q, part.table, part.columns), part, stream)
        else:
            conn.execute(q.stage_embeddings)
            loaded = _copy(cur, import_statement(q, "snapshot_embeddings", part.columns), part, stream)
            _check_vector_models(conn, q, manifest)
            # Texts the store had embedded already (a user folder's) keep their vectors.
            cur.execute(sql.SQL(q.insert_staged_embeddings).format(columns=column_list(part.columns)))
    if loaded != part.rows:
        raise SnapshotRefused(f"the snapshot's {part.table} loaded {loaded} rows; its manifest says {part.rows}")
    return loaded


def check_not_older(conn: psycopg.Connection, q: Queries, manifest: Manifest) -> None:
    """SnapshotRefused when the store holds a publish of a public source finished after the snapshot was
    exported: a snapshot older than what the store holds (a replay) would take it back in time."""
    row = conn.execute(public_statement(q, q.newest_publish), PUBLIC).fetchone()
    if row is not None and row[1] > manifest.created:
        raise SnapshotRefused(
            f"the snapshot was exported at {manifest.created_at}, before this store's publish of {row[0]} at "
            f"{row[1].isoformat(timespec='seconds')}: a snapshot older than what the store holds is refused",
            hint="export a newer snapshot, or import into a new database",
        )


def check_public(conn: psycopg.Connection, q: Queries) -> None:
    """SnapshotRefused naming the first row the import wrote that is not public (its part, row and why)."""
    row = conn.execute(q.imported_private_rows, PUBLIC).fetchone()
    if row is not None:
        part, key, reason = row
        raise SnapshotRefused(
            f"the snapshot's parts/{part}.copy holds a row that is not public: {key} ({reason}); nothing was imported",
            hint="a snapshot holds public sources and documents only (secrag snapshot export writes no other); "
            "check where this one came from",
        )


def _load(
    conn: psycopg.Connection, sql_dir: Path, path: Path, header: Header, models_dir: Path
) -> tuple[dict[str, int], str | None]:
    """Every part into the store and the sentence model into `models_dir`, in one transaction (the caller's); the
    rows loaded and the sentence model serving."""
    q = Queries(sql_dir, "snapshot")
    manifest = header.manifest
    conn.execute(q.lock_import)
    public = int(one_row(conn.execute(q.public_documents))[0])
    if public:
        raise SnapshotRefused(
            f"this store already holds {public} documents of public sources; a snapshot starts a fresh store",
            hint="import into a new database (user folders may be there); a store with sources is kept current "
            "by the pipeline",
        )
    check_not_older(conn, q, manifest)
    conn.execute(q.drop_unpublished_public_sources)
    conn.execute(q.clear_techniques)
    store_q = Queries(sql_dir, "store")
    trained = manifest.trained
    models = {
        manifest.model.id: manifest.model.dimensions,
        **({trained.served_model: trained.dimensions} if trained else {}),
    }
    for model_id, dimensions in models.items():
        conn.execute(store_q.ensure_model, {"model": model_id, "dimensions": dimensions})
    conn.execute(q.import_maintenance_memory, {"memory": INDEX_MEMORY})
    staging = staging_folder(models_dir, trained) if trained else None
    try:
        rows = {}
        for member, stream in part_streams(path, header):
            if isinstance(member, Part):
                rows[member.table] = _load_part(conn, q, manifest, member, stream)
            else:
                assert staging is not None
                stage(member, stream, staging)
        check_public(conn, q)  # before the counts and the index update rows of their own
        if trained and staging:
            install(trained, staging, models_dir)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    for model_id, dimensions in models.items():
        started = time.monotonic()
        if ensure_model_index(conn, model_id, dimensions, store_q):
            log.info("snapshot import: HNSW index of %s built in %.1fs", model_id, time.monotonic() - started)
        conn.execute(store_q.refresh_model_vectors, {"model": model_id})
    refresh_all_counts(store_q, conn)
    serving = trained.model_id if trained and register(conn, sql_dir, trained) else None
    return rows, serving


def import_snapshot(
    conn: psycopg.Connection,
    sql_dir: Path,
    path: Path,
    model: ModelFacts,
    public_key: str | None = None,
    max_bytes: int = MAX_BYTES,
    models_dir: Path | None = None,
) -> Imported:
    """Verify the snapshot at `path` and load it into the store of `conn` (autocommit) in one transaction, its
    sentence model into `models_dir` (default SECRAG_MODEL_CACHE_DIR's, where the registry reads trained models);
    SnapshotRefused (the store unchanged) when any check fails."""
    models_dir = models_dir or get_settings().models_dir
    started = time.monotonic()
    header = read_header(path, public_key, max_bytes)
    check_compatible(conn, sql_dir, header.manifest, model)
    verify_parts(path, header)
    try:
        with conn.transaction():
            rows, sentence = _load(conn, sql_dir, path, header, models_dir)
            activation = activate_model_if_complete(conn, sql_dir, model.id)
    except (psycopg.Error, *UNREADABLE) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SnapshotRefused(f"the snapshot could not be loaded ({first}); nothing was imported") from exc
    conn.execute(Queries(sql_dir, "snapshot").analyze_imported)
    seconds = time.monotonic() - started
    log.info(
        "snapshot %s imported in %.1fs: %d sources, %d chunks, model %s (active: %s), sentence model %s",
        header.digest[:16],
        seconds,
        len(header.manifest.sources),
        rows.get("chunks", 0),
        model.id,
        activation.active,
        sentence or "none",
    )
    return Imported(header.manifest, rows, header.signed, activation.active, seconds, sentence)
