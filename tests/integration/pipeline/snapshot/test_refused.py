"""A snapshot with one changed byte, of another schema version or of another model is refused with a clear error,
and the store it was to go into is unchanged (its user folder included)."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.chunking import ChunkConfig
from pipeline.snapshot.loading import import_snapshot
from pipeline.snapshot.manifest import MANIFEST, ModelFacts
from pipeline.sources.records import Record
from pipeline.store import Access, SourceRow, Store
from secrag.errors import SnapshotRefused

from .conftest import SQL_DIR

TABLES = (
    "sources",
    "source_versions",
    "documents",
    "chunks",
    "embeddings",
    "chunk_vectors",
    "document_accesses",
    "technique_documents",
    "mitre_techniques",
    "embedding_models",
    "source_counts",
    "ingested_documents",
)


def state(conn: Any) -> dict[str, tuple[Any, ...]]:  # noqa: ANN401
    """Each table's row count and a digest of its rows."""
    out = {}
    for table in TABLES:
        row = conn.execute(
            f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t"  # noqa: S608
        ).fetchone()
        out[table] = row
    return out


@pytest.fixture
def target(db: Any) -> Iterator[Any]:  # noqa: ANN401
    """A fresh store holding one user folder."""
    store = Store(SQL_DIR)
    store.register_source(db, SourceRow(name="team_notes", kind="user_folder", description="notes"))
    record = Record(source="team_notes", upstream_id="a.md", title="Runbook", body="Our LSASS runbook.")
    store.publish(
        db,
        source="team_notes",
        version="v1",
        records=[record],
        lookup={},
        chunking=ChunkConfig(),
        access=Access("acme"),
    )
    yield db


def rewritten(snapshot: Path, folder: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """The snapshot with its manifest changed by `change` (the parts as they were)."""
    out = folder / "changed.tar"
    with tarfile.open(snapshot) as src, tarfile.open(out, "w") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name == MANIFEST:
                manifest = json.loads(data)
                change(manifest)
                data = json.dumps(manifest).encode()
            member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    return out


def refused(conn: Any, path: Path, model: ModelFacts, match: str) -> None:  # noqa: ANN401
    before = state(conn)
    with pytest.raises(SnapshotRefused, match=match):
        import_snapshot(conn, SQL_DIR, path, model)
    assert state(conn) == before


def with_one_byte_changed(snapshot: Path, changed: Path) -> Path:
    """A copy of `snapshot` at `changed` with one bit of the chunks part flipped (its checksum no longer matches)."""
    shutil.copyfile(snapshot, changed)
    with tarfile.open(changed) as tar:
        chunks = tar.getmember("parts/chunks.copy")
    with changed.open("r+b") as fh:
        fh.seek(chunks.offset_data + chunks.size // 2)
        byte = fh.read(1)
        fh.seek(-1, io.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0x01]))
    return changed


def test_one_changed_byte_is_refused(snapshot_file: Path, model: ModelFacts, target: Any, tmp_path: Path) -> None:  # noqa: ANN401
    changed = with_one_byte_changed(snapshot_file, tmp_path / "changed.tar")
    refused(target, changed, model, r"parts/chunks\.copy does not match its checksum")


def test_a_truncated_snapshot_is_refused(snapshot_file: Path, model: ModelFacts, target: Any, tmp_path: Path) -> None:  # noqa: ANN401
    cut = tmp_path / "cut.tar"
    cut.write_bytes(snapshot_file.read_bytes()[: snapshot_file.stat().st_size // 2])
    refused(target, cut, model, "not a readable snapshot|truncated|damaged")


def test_another_schema_version_is_refused(snapshot_file: Path, model: ModelFacts, target: Any, tmp_path: Path) -> None:  # noqa: ANN401
    older = rewritten(snapshot_file, tmp_path, lambda m: m.update(schema_version=m["schema_version"] - 1))
    refused(target, older, model, r"schema version \d+; this store is at \d+")


def test_another_model_is_refused(snapshot_file: Path, model: ModelFacts, target: Any, tmp_path: Path) -> None:  # noqa: ANN401
    other = rewritten(snapshot_file, tmp_path, lambda m: m["model"].update(id="bge-base-en-v1.5", dimensions=768))
    refused(target, other, model, "holds vectors of model bge-base-en-v1.5; this store embeds with all-MiniLM-L6-v2")


def test_other_weights_of_the_same_model_are_refused(
    snapshot_file: Path,
    model: ModelFacts,
    target: Any,
    tmp_path: Path,  # noqa: ANN401
) -> None:
    other = rewritten(snapshot_file, tmp_path, lambda m: m["model"].update(digest="0123456789ab"))
    refused(target, other, model, "has weights 0123456789ab")


def test_a_part_whose_rows_differ_from_the_manifest_is_refused(
    snapshot_file: Path,
    model: ModelFacts,
    target: Any,
    tmp_path: Path,  # noqa: ANN401
) -> None:
    """Past every check, a load that does not match the manifest rolls back whole (the parts loaded before it too)."""

    def fewer(m: dict[str, Any]) -> None:
        next(p for p in m["parts"] if p["table"] == "chunks")["rows"] -= 1

    refused(target, rewritten(snapshot_file, tmp_path, fewer), model, "chunks loaded \\d+ rows; its manifest says")


def test_a_good_snapshot_leaves_the_user_folder_as_it_was(
    snapshot_file: Path,
    model: ModelFacts,
    target: Any,  # noqa: ANN401
) -> None:
    mine = (
        "SELECT d.doc_id, d.tenant, c.chunk_id, c.content_hash FROM documents d JOIN chunks c USING (doc_id) "
        "WHERE d.source = 'team_notes'"
    )
    before = target.execute(mine).fetchall()
    done = import_snapshot(target, SQL_DIR, snapshot_file, model)
    assert done.rows["chunks"] > 100
    assert target.execute(mine).fetchall() == before
    assert target.execute("SELECT kind FROM sources WHERE name = 'team_notes'").fetchone() == ("user_folder",)
