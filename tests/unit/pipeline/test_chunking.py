"""Chunking: deterministic, header-aware, sizes respected."""

from __future__ import annotations

from pipeline.chunking import ChunkConfig, chunk_text
from pipeline.indexing import chunk_rows
from pipeline.sources.records import Record


def long_markdown() -> str:
    words = " ".join(f"word{i}." if i % 13 == 0 else f"word{i}" for i in range(900))
    return f"# Title\n\nintro para.\n\n## Detection\n\n{words}\n\n## Other\n\nshort end."


def test_short_bodies_are_one_chunk() -> None:
    assert chunk_text("a short rule body") == ["a short rule body"]
    assert chunk_text("") == [""]


def test_long_bodies_respect_the_target_and_overlap() -> None:
    cfg = ChunkConfig(target=1000, overlap=150)
    chunks = chunk_text(long_markdown(), cfg)
    assert len(chunks) > 5
    assert all(len(c) <= cfg.target for c in chunks)
    # consecutive windows of the long paragraph overlap
    assert chunks[2][:40] in chunks[1] or chunks[2].split()[0] in chunks[1]


def test_headings_start_new_chunks_when_the_current_one_is_large() -> None:
    sections = "\n\n".join(f"## Section {i}\n\n" + ("text " * 120) for i in range(4))
    chunks = chunk_text(sections, ChunkConfig(target=1000, overlap=100))
    assert all(c.startswith("## Section") for c in chunks)


def test_chunking_is_deterministic_and_ids_are_positional_within_a_doc() -> None:
    record = Record("demo", "x1", "Title", long_markdown())
    a = chunk_rows(record, {}, ChunkConfig())
    b = chunk_rows(record, {}, ChunkConfig())
    assert a == b
    assert [r.chunk_id for r in a] == [f"demo:x1#{i}" for i in range(len(a))]
    assert len({r.content_hash for r in a}) == len(a)


def test_config_changes_the_chunker_version() -> None:
    assert ChunkConfig(1000, 150).version != ChunkConfig(800, 150).version
