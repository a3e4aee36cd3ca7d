"""Deterministic, header-aware chunking of document bodies into `<doc_id>#<n>` pieces."""

from __future__ import annotations

import re
from dataclasses import dataclass

CHUNKER_VERSION = "1"
_HEADING = re.compile(r"^(#{1,6})\s+\S", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ChunkConfig:
    """Target size and overlap, in characters."""

    target: int = 1000
    overlap: int = 150

    @property
    def version(self) -> str:
        return f"{CHUNKER_VERSION}:{self.target}:{self.overlap}"


def _sections(body: str) -> list[str]:
    """Split at Markdown headings, keeping each heading with its section."""
    starts = [m.start() for m in _HEADING.finditer(body)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(body)]
    return [body[a:b].strip() for a, b in zip(bounds, bounds[1:], strict=False) if body[a:b].strip()]


def _windows(text: str, cfg: ChunkConfig) -> list[str]:
    """Split one over-long paragraph into overlapping windows, preferring sentence then space breaks."""
    pieces: list[str] = []
    start = 0
    step_min = max(1, cfg.target - cfg.overlap)
    while start < len(text):
        end = min(len(text), start + cfg.target)
        if end < len(text):
            window = text[start:end]
            cut = max((m.end() for m in _SENTENCE_END.finditer(window) if m.end() > step_min // 2), default=-1)
            if cut <= 0:
                cut = window.rfind(" ", step_min // 2)
            if cut > 0:
                end = start + cut
        pieces.append(text[start:end].strip())
        if end >= len(text):
            break
        start = max(start + 1, end - cfg.overlap)
        space = text.find(" ", start, end)
        if 0 <= space < end and space - start < cfg.overlap // 2:
            start = space + 1
    return [p for p in pieces if p]


def chunk_text(body: str, cfg: ChunkConfig = ChunkConfig()) -> list[str]:
    """Chunks of the body: whole when short, else paragraphs packed up to the target size.

    A Markdown heading starts a new chunk once the current one holds half the target, so sections
    stay together without producing tiny chunks; over-long paragraphs become overlapping windows.
    """
    body = body.strip()
    if not body:
        return [""]
    if len(body) <= cfg.target * 1.2:
        return [body]
    chunks: list[str] = []
    current = ""
    for section in _sections(body):
        if current and len(current) >= cfg.target // 2:
            chunks.append(current)
            current = ""
        for paragraph in (p.strip() for p in _PARAGRAPH_BREAK.split(section)):
            if not paragraph:
                continue
            if len(paragraph) > cfg.target:
                if current:
                    chunks.append(current)
                    current = ""
                windows = _windows(paragraph, cfg)
                chunks.extend(windows[:-1])
                current = windows[-1]  # later short paragraphs may still join the last window
                continue
            candidate = f"{current}\n\n{paragraph}" if current else paragraph
            if len(candidate) <= cfg.target:
                current = candidate
            else:
                chunks.append(current)
                current = paragraph
    if current:
        chunks.append(current)
    return chunks
