"""Store rows: the document hash covers place and access; COPY rows follow the column order."""

from __future__ import annotations

from pipeline.chunking import ChunkConfig
from pipeline.indexing import chunk_rows
from pipeline.sources.records import Record
from pipeline.store.models import PUBLIC, Access
from pipeline.store.rows import chunk_copy_row, document_copy_row, document_hash


def _rec(body: str = "Body", path: str = "") -> Record:
    return Record(source="demo", upstream_id="r1", title="Rule", body=body, url="", path=path)


def test_document_hash_changes_with_content_place_and_access() -> None:
    base = document_hash(_rec(), PUBLIC)
    assert document_hash(_rec(), PUBLIC) == base
    assert document_hash(_rec(body="Other"), PUBLIC) != base
    assert document_hash(_rec(path="rules/r1.yml"), PUBLIC) != base
    assert document_hash(_rec(), Access(tenant="acme")) != base
    assert document_hash(_rec(), Access(tenant="acme", groups=("soc",))) != document_hash(_rec(), Access(tenant="acme"))


def test_copy_rows() -> None:
    record = _rec(path="rules/r1.yml")
    row = document_copy_row(record, "h", "demo", "v1", Access(tenant="acme", users=("ann",)))
    assert row[:4] == ["demo:r1", "demo", "v1", "Rule"]
    assert row[4] is None  # no url
    assert row[10:] == ["h", "acme", ["ann"], [], "rules/r1.yml", None]  # no media type
    [chunk] = chunk_rows(record, {}, ChunkConfig())
    assert chunk_copy_row(chunk)[:4] == [chunk.chunk_id, "demo:r1", "demo", 0]
    assert chunk_copy_row(chunk)[8:] == [chunk.content_hash, 0, len(record.body), None, None]  # span, no pages
