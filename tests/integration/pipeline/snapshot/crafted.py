"""Snapshots as an attacker would write them: every part a binary COPY of whatever rows a test picks, with a
manifest whose sizes and checksums are right (and a signature, given the key), so only the import's checks
of the rows themselves stand between them and the store."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from psycopg import sql

from pipeline.snapshot import signature
from pipeline.snapshot.manifest import MANIFEST, SIGNATURE, Manifest, ModelFacts, Part, SourceFacts
from pipeline.snapshot.parts import PART_TABLES, column_list, table_columns
from secrag.db import database, migrations
from secrag.db.queries import Queries

from .conftest import SQL_DIR


def crafted_snapshot(
    url: str,
    model: ModelFacts,
    target: Path,
    *,
    tamper: Sequence[str] = (),
    where: Mapping[str, str] | None = None,
    created_at: datetime | None = None,
    sign_key: Path | None = None,
) -> Path:
    """A snapshot of the store at `url` after the `tamper` statements (rolled back after: the store is left as
    it was), each part every row of its table matching `where[table]` (SQL; default all), the embeddings
    those of `model`."""
    where = dict(where or {})
    q = Queries(SQL_DIR, "snapshot")
    folder = target.parent / f".{target.name}.parts"
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    with database.connect(url) as conn:
        for statement in tamper:
            conn.execute(statement)
        for table in PART_TABLES:
            condition = where.get(table, "true")
            if table == "embeddings":
                condition = f"({condition}) AND model_id = {model.id!r}"
            columns = table_columns(conn, q, table)
            copy_of = sql.SQL(
                "COPY (SELECT {columns} FROM {table} WHERE {condition}) TO STDOUT (FORMAT BINARY)"
            ).format(columns=column_list(columns), table=sql.Identifier(table), condition=sql.SQL(condition))
            digest, size = hashlib.sha256(), 0
            with (folder / table).open("wb") as out, conn.cursor() as cur:
                with cur.copy(copy_of) as copy:
                    for block in copy:
                        out.write(block)
                        digest.update(block)
                        size += len(block)
                rows = cur.rowcount
            parts.append(Part(table, f"parts/{table}.copy", columns, rows, size, digest.hexdigest()))
        listed = f"SELECT name, current_version FROM sources WHERE {where.get('sources', 'true')}"  # noqa: S608
        sources = tuple(SourceFacts(name, version, 0, 0) for name, version in conn.execute(listed))
        schema = migrations.current_version(conn, SQL_DIR)
        server = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
        conn.rollback()
    manifest = Manifest(
        schema_version=schema,
        model=model,
        sources=sources,
        parts=tuple(parts),
        created_at=(created_at or datetime.now(UTC)).isoformat(timespec="seconds"),
        secrag_version="crafted",
        server_version=server,
    )
    return write_snapshot(manifest, folder, target, sign_key)


def write_snapshot(manifest: Manifest, folder: Path, target: Path, sign_key: Path | None = None) -> Path:
    """The tar of `manifest` (signed with `sign_key`) and the parts' files in `folder` (named by table)."""
    data = manifest.to_bytes()
    with tarfile.open(target, "w") as tar:
        members = [(MANIFEST, data)] + ([(SIGNATURE, signature.sign(data, sign_key))] if sign_key else [])
        for name, body in members:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
        for part in manifest.parts:
            tar.add(str(folder / part.table), arcname=part.member)
    return target


def declaring(manifest: Manifest, table: str, size: int) -> Manifest:
    """The manifest with the part of `table` declaring `size` bytes."""
    return replace(manifest, parts=tuple(replace(p, bytes=size) if p.table == table else p for p in manifest.parts))
