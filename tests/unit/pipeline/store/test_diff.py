"""The publish diff: new, changed, unchanged and vanished documents, by hash and chunk signature."""

from __future__ import annotations

import dataclasses

from pipeline.chunking import ChunkConfig
from pipeline.indexing import chunk_rows
from pipeline.sources.records import Record
from pipeline.store.diff import Held, chunk_signature, diff
from pipeline.store.models import PUBLIC, Access
from pipeline.store.rows import document_hash

LOOKUP = {"T1003": "OS Credential Dumping"}


def _rec(i: int, body: str = "") -> Record:
    return Record(source="demo", upstream_id=f"r{i}", title=f"Rule {i}", body=body or f"Body {i}", url="")


def _held(record: Record, lookup: dict[str, str], access: Access = PUBLIC) -> Held:
    return Held(document_hash(record, access), chunk_signature(chunk_rows(record, lookup, ChunkConfig())), record.url)


def test_each_record_lands_in_one_bucket() -> None:
    same, changed, new = _rec(1), _rec(2), _rec(3)
    existing = {
        same.doc_id: _held(same, LOOKUP),
        changed.doc_id: _held(_rec(2, body="old body"), LOOKUP),
        "demo:gone": Held("h", "s"),
    }
    changes = diff([same, changed, new], existing, PUBLIC, LOOKUP, ChunkConfig())
    assert [c.record for c in changes.inserted] == [new]
    assert [c.record for c in changes.updated] == [changed]
    assert changes.unchanged == 1
    assert changes.deleted == ["demo:gone"]
    assert changes.inserted[0].chunks and changes.inserted[0].doc_hash == document_hash(new, PUBLIC)


def test_a_lookup_change_updates_documents_whose_chunks_it_enriches() -> None:
    named, plain = _rec(1, body="Dumps T1003 credentials"), _rec(2)
    existing = {named.doc_id: _held(named, {}), plain.doc_id: _held(plain, {})}
    changes = diff([named, plain], existing, PUBLIC, LOOKUP, ChunkConfig())
    assert [c.record for c in changes.updated] == [named]
    assert changes.unchanged == 1


def test_an_access_change_updates_every_document() -> None:
    record = _rec(1)
    existing = {record.doc_id: _held(record, LOOKUP)}
    changes = diff([record], existing, Access(tenant="acme", users=("ann",)), LOOKUP, ChunkConfig())
    assert [c.record for c in changes.updated] == [record]


def test_a_url_pinned_to_the_new_version_is_no_change_of_content() -> None:
    old = Record(source="demo", upstream_id="r1", title="Rule 1", body="Body 1", url="https://x.test/blob/v1/r1.yml")
    moved = dataclasses.replace(old, url="https://x.test/blob/v2/r1.yml")
    edited = dataclasses.replace(moved, body="Body 1, edited")
    changes = diff([moved], {old.doc_id: _held(old, LOOKUP)}, PUBLIC, LOOKUP, ChunkConfig())
    assert [c.record for c in changes.updated] == [moved] and changes.modified == []  # stored with its new URL
    changes = diff([edited], {old.doc_id: _held(old, LOOKUP)}, PUBLIC, LOOKUP, ChunkConfig())
    assert [c.record for c in changes.modified] == [edited]
