"""Chunk rows from records: a record's own identifiers (a schema's field names) go with the chunks whose
text holds them, beside the identifier forms found in the text; records without any hash as before."""

from __future__ import annotations

from pipeline.chunking import ChunkConfig
from pipeline.indexing import chunk_rows
from pipeline.sources.records import Record


def _record(**kw: object) -> Record:
    fields = [f"- process.field_{i:03d} (keyword): a field of the process set, number {i}." for i in range(60)]
    body = "Fields:\n" + "\n".join(fields) + "\nSee mimikatz.exe and T1003.001."
    return Record(source="ecs", upstream_id="process", title="ECS process fields", body=body, **kw)  # type: ignore[arg-type]


def test_each_chunk_keeps_the_identifiers_its_text_holds() -> None:
    names = tuple(f"process.field_{i:03d}" for i in range(60))
    rows = chunk_rows(_record(identifiers=names), {}, ChunkConfig(target=1000, overlap=0))
    assert len(rows) > 1
    for row in rows:
        kept = [n for n in names if n in row.identifiers.split()]
        assert kept and all(n in row.text for n in kept)
    assert "process.field_000" in rows[0].identifiers.split()
    assert "process.field_000" not in rows[-1].identifiers.split()
    assert {"mimikatz", "t1003"} <= set(rows[-1].identifiers.split())  # the text's own forms as before


def test_identifiers_change_the_hash_only_when_given() -> None:
    plain = _record()
    assert plain.content_hash == _record(identifiers=()).content_hash
    assert plain.content_hash != _record(identifiers=("process.field_000",)).content_hash
