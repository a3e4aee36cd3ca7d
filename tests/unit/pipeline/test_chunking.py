"""Chunking: deterministic, header-aware, sizes respected."""

from __future__ import annotations

import pytest

from pipeline.chunking import ChunkConfig, chunk_spans, chunk_text
from pipeline.indexing import chunk_rows
from pipeline.sources.records import Record
from secrag.errors import ConfigError


def long_markdown() -> str:
    words = " ".join(f"word{i}." if i % 13 == 0 else f"word{i}" for i in range(900))
    return f"# Title\n\nintro para.\n\n## Detection\n\n{words}\n\n## Other\n\nshort end."


def test_short_bodies_are_one_chunk() -> None:
    assert chunk_text("a short rule body") == ["a short rule body"]
    assert chunk_text("") == [""]


def test_long_bodies_respect_the_target_and_overlap() -> None:
    cfg = ChunkConfig(target=1000, overlap=150, across=False)
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
    assert ChunkConfig(1000, 200, across=False).version != ChunkConfig(1000, 200, across=True).version


def paragraphs(count: int) -> str:
    return "\n\n".join(f"Paragraph {i} opens. " + " ".join(f"p{i}w{j}" for j in range(60)) + "." for i in range(count))


def test_across_paragraphs_a_chunk_starts_with_the_previous_ones_tail() -> None:
    cfg = ChunkConfig(target=1000, overlap=200, across=True)
    chunks = chunk_text(paragraphs(10), cfg)
    assert len(chunks) > 2 and all(len(c) <= cfg.target + cfg.overlap for c in chunks)
    for before, after in zip(chunks, chunks[1:], strict=False):
        carried = after.split("\n\n", 1)[0]
        assert before.endswith(carried) and 0 < len(carried) <= cfg.overlap  # a word or sentence start
    plain = chunk_text(paragraphs(10), ChunkConfig(target=1000, overlap=200, across=False))
    assert all(after.startswith("Paragraph") for after in plain[1:])  # paragraphs only, no overlap


def test_across_paragraphs_a_heading_still_starts_its_chunk() -> None:
    sections = "\n\n".join(f"## Section {i}\n\n" + ("text " * 120) for i in range(4))
    chunks = chunk_text(sections, ChunkConfig(target=1000, overlap=200, across=True))
    assert all(c.startswith("## Section") for c in chunks)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"size": 900}, "unknown keys size"),
        ({"target": 100}, "target must be"),
        ({"target": "big"}, "target must be"),
        ({"overlap": 1000}, r"overlap must be .* \[0, target\)"),
        ({"across": "yes"}, "across must be true or false"),
    ],
)
def test_bad_overrides_are_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ChunkConfig().with_overrides(overrides)


def test_overrides_apply_over_the_defaults() -> None:
    assert ChunkConfig(1000, 150).with_overrides({"overlap": 200, "across": True}) == ChunkConfig(1000, 200, True)


@pytest.mark.parametrize(
    "cfg", [ChunkConfig(1000, 150, across=False), ChunkConfig(1000, 200, across=True)], ids=["paragraphs", "across"]
)
def test_each_chunk_knows_its_span_and_heading(cfg: ChunkConfig) -> None:
    body = "\n" + long_markdown()  # a leading newline: offsets are into the body as stored
    spans = chunk_spans(body, cfg)
    assert [s.text for s in spans] == chunk_text(body, cfg)
    for span in spans:
        located = body[span.start : span.end]
        assert located.startswith(span.text.split("\n\n")[0]) and located.endswith(span.text.rsplit("\n\n")[-1])
    assert spans[0].start == 1 and spans[0].heading == "Title"
    detection, other = body.index("## Detection"), body.index("## Other")
    assert all(s.heading == "Detection" for s in spans if detection <= s.start < other)
    assert any(s.heading == "Detection" for s in spans)
    assert all(a.start <= b.start for a, b in zip(spans, spans[1:], strict=False))


def test_a_pdf_chunk_names_its_pages() -> None:
    pages = [[1, 0], [2, 1500], [5, 3000]]
    body = " ".join(f"w{i}" for i in range(800))
    record = Record("folder", "a.pdf", "A", body, metadata={"page_starts": pages})
    rows = chunk_rows(record, {}, ChunkConfig())
    assert rows[0].pages == (1,) and rows[-1].pages[-1] == 5
    assert all(r.pages and r.char_start < r.char_end for r in rows)
    assert chunk_rows(Record("demo", "x", "X", body), {}, ChunkConfig())[0].pages is None
