"""Deterministic, header-aware chunking of document bodies into `<doc_id>#<n>` pieces."""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from secrag.errors import ConfigError
from secrag.settings import Settings

CHUNKER_VERSION = "1"  # "2" when chunks overlap across paragraphs (ChunkConfig.across)
_HEADING = re.compile(r"^(#{1,6})\s+\S", re.MULTILINE)
_HEADING_LINE = re.compile(r"^(#{1,6})\s+(\S[^\n]*?)\s*#*\s*$", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ChunkConfig:
    """Target size and overlap, in characters. `across`: a chunk after another of the same section starts
    with the other's last `overlap` characters (from a sentence or word start), as well as over-long
    paragraphs being cut into overlapping windows; otherwise only those windows overlap."""

    # 1000/200 across paragraphs: dev hybrid nDCG@10 0.845 against 0.838 with 150 inside long paragraphs
    # only (bench/quality.py on a store built with each).
    target: int = 1000
    overlap: int = 200
    across: bool = True

    def with_overrides(self, overrides: Mapping[str, Any]) -> ChunkConfig:
        """This config with a source's own `chunking` (registry YAML: target, overlap, across); ConfigError
        naming the bad key or value."""
        unknown = sorted(set(overrides) - {"target", "overlap", "across"})
        if unknown:
            raise ConfigError(f"chunking: unknown keys {', '.join(unknown)}; known: target, overlap, across")
        merged = dataclasses.replace(self, **overrides)
        if not isinstance(merged.target, int) or isinstance(merged.target, bool) or merged.target < 200:
            raise ConfigError(f"chunking: target must be a whole number of characters >= 200, not {merged.target!r}")
        if (
            not isinstance(merged.overlap, int)
            or isinstance(merged.overlap, bool)
            or not 0 <= merged.overlap < merged.target
        ):
            raise ConfigError(
                f"chunking: overlap must be a whole number of characters in [0, target), not {merged.overlap!r}"
            )
        if not isinstance(merged.across, bool):
            raise ConfigError(f"chunking: across must be true or false, not {merged.across!r}")
        return merged

    @classmethod
    def from_settings(cls, settings: Settings) -> ChunkConfig:
        """The settings' chunking, checked as a source's overrides are (ConfigError)."""
        return cls().with_overrides(
            {
                "target": settings.chunk_target_chars,
                "overlap": settings.chunk_overlap_chars,
                "across": settings.chunk_across_paragraphs,
            }
        )

    @property
    def version(self) -> str:
        if self.across:
            return f"2:{self.target}:{self.overlap}"
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


def _tail(chunk: str, size: int) -> str:
    """The last `size` characters of a chunk, from the first sentence start in them (else word start)."""
    if size <= 0 or len(chunk) <= size:
        return chunk if size > 0 else ""
    tail = chunk[-size:]
    sentence = _SENTENCE_END.search(tail)
    if sentence and sentence.end() < len(tail) // 2:
        return tail[sentence.end() :].strip()
    space = tail.find(" ")
    return tail[space + 1 :].strip() if 0 <= space < len(tail) // 2 else tail.strip()


def chunk_text(body: str, cfg: ChunkConfig = ChunkConfig()) -> list[str]:
    """Chunks of the body: whole when short, else paragraphs packed up to the target size.

    A Markdown heading starts a new chunk once the current one holds half the target, so sections
    stay together without producing tiny chunks; over-long paragraphs become overlapping windows.
    With `cfg.across`, a chunk that continues a section starts with the previous chunk's tail.
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
                carried = ""
                if current:
                    chunks.append(current)
                    carried = _tail(current, cfg.overlap) if cfg.across else ""
                    current = ""
                windows = _windows(f"{carried}\n\n{paragraph}" if carried else paragraph, cfg)
                chunks.extend(windows[:-1])
                current = windows[-1]  # later short paragraphs may still join the last window
                continue
            candidate = f"{current}\n\n{paragraph}" if current else paragraph
            if len(candidate) <= cfg.target:
                current = candidate
            else:
                chunks.append(current)
                carried = _tail(current, cfg.overlap) if cfg.across else ""
                joined = f"{carried}\n\n{paragraph}" if carried else paragraph
                current = joined if len(joined) <= cfg.target + cfg.overlap else paragraph
    if current:
        chunks.append(current)
    return chunks


@dataclass(frozen=True)
class ChunkSpan:
    """A chunk with where it sits in the document body: characters [start, end) and the Markdown heading
    it falls under (None before the first, or without any)."""

    text: str
    start: int
    end: int
    heading: str | None


def chunk_spans(body: str, cfg: ChunkConfig = ChunkConfig()) -> list[ChunkSpan]:
    """`chunk_text`'s chunks, each located in `body`: it starts where its first paragraph does and ends
    where its last one does (chunks overlap, so each is looked for from the previous one's start)."""
    spans: list[ChunkSpan] = []
    headings = [(m.start(), m.group(2).strip()) for m in _HEADING_LINE.finditer(body)]
    floor = 0
    for text in chunk_text(body, cfg):
        start = _find(body, text, floor)
        last = text.rsplit("\n\n", 1)[-1]
        tail = body.find(last, start)
        end = tail + len(last) if tail >= 0 else min(len(body), start + len(text))
        before = bisect.bisect_right(headings, start, key=lambda h: h[0])
        spans.append(ChunkSpan(text, start, max(start, end), headings[before - 1][1] if before else None))
        floor = start + 1  # overlapping chunks still start after the one before
    return spans


def _find(body: str, text: str, floor: int) -> int:
    """Where `text` starts in `body` at or after `floor`: the whole chunk where its paragraphs are joined
    as in the body (a repeated short first paragraph, a code fence, cannot mislead it), else its first
    paragraph."""
    for probe in (text[:300], text.split("\n\n", 1)[0]):
        found = body.find(probe, floor)
        if found >= 0:
            return found
    return max(0, body.find(text.split("\n\n", 1)[0]))
