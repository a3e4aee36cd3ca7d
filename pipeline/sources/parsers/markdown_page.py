"""Markdown documentation pages (e.g. Stratus Red Team techniques): one record per page."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag.errors import ParseError
from secrag.files import safe_yaml
from secrag.identifiers import TECHNIQUE

from .yaml_entry import compact, text, web_url

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
# HTML the docs site uses for badges and inline code; stripped, their text kept.
_HTML_TAG = re.compile(
    r"</?(?:span|code|pre|a|div|br|p|b|i|em|strong|sup|sub|small|details|summary|img|kbd)\b[^>]*>", re.IGNORECASE
)
_STYLE = re.compile(r"<style\b.*?</style>", re.DOTALL | re.IGNORECASE)
_FOOTNOTE_REF = re.compile(r"\[\^[^\]]+\](?!:)")
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")
# ATT&CK technique pages linked anywhere in the text are explicit mappings too.
_ATTACK_URL = re.compile(rf"attack\.mitre\.org/(?:versions/v\d+/)?techniques/({TECHNIQUE}(?:/\d{{3}})?)", re.IGNORECASE)
_BADGE = re.compile(r"<span[^>]*\bw3-badge\b[^>]*>\s*([^<]+?)\s*</span>", re.IGNORECASE)


def parse(file: SourceFile) -> Iterator[Record]:
    """The page as one record; pages without the `page_marker` (indexes, overviews) yield nothing."""
    try:
        raw = file.text()
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text: {exc.reason}") from exc
    front, content = _split_front_matter(raw)
    marker = file.options.get("page_marker")
    if marker and not re.search(marker, content, re.MULTILINE):
        return
    sections = _sections(content)
    title = text(front.get("title")) or _first_heading(content)
    if not title:
        raise ParseError("page has neither a front-matter title nor a heading")
    mapping_text = "\n".join(sections.get(s, "") for s in file.options.get("technique_sections", []))
    # Badges under the page heading describe the page (`idempotent`); later ones mark sections.
    header = content.split("\n## ", 1)[0]
    badges = sorted({b.strip().lower() for b in _BADGE.findall(header)})
    body = _clean(content)
    stem = PurePosixPath(file.rel).stem
    yield Record(
        source=file.source,
        upstream_id=file.rel,
        title=title,
        body=body,
        url=web_url(file),
        techniques=normalize.technique_ids([mapping_text, *_ATTACK_URL.findall(content)]),
        platforms=_platforms(file),
        tags=normalize.tags(_tactics(mapping_text) + badges),
        metadata=compact(
            {
                "page_id": stem,
                "platform": _platform_line(content),
                "tactics": _tactics(mapping_text),
                "badges": badges,
            }
        ),
        path=file.rel,
    )


def _split_front_matter(raw: str) -> tuple[Mapping[str, Any], str]:
    match = _FRONT_MATTER.match(raw)
    if match is None:
        return {}, raw
    front = safe_yaml.load(match.group(1)) if match.group(1).strip() else {}
    if not isinstance(front, dict):
        raise ParseError("front matter is not a mapping")
    return front, raw[match.end() :]


def _first_heading(content: str) -> str:
    match = _HEADING.search(content)
    return _HTML_TAG.sub("", match.group(2)).strip() if match else ""


def _sections(content: str) -> dict[str, str]:
    """Level-2 sections by heading text (HTML badges stripped from the heading)."""
    found: dict[str, str] = {}
    matches = [m for m in _HEADING.finditer(content) if len(m.group(1)) == 2]
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(content)
        heading = re.sub(r"<[^>]+>.*", "", match.group(2)).strip()
        found[heading] = content[match.end() : end]
    return found


def _tactics(mapping_text: str) -> list[str]:
    """Nested bullets under the `MITRE ATT&CK` bullet of a Mappings section."""
    tactics: list[str] = []
    inside = False
    for line in mapping_text.splitlines():
        bullet = re.match(r"^(\s*)[-*]\s+(.+?)\s*$", line)
        if bullet is None:
            continue
        nested = len(bullet.group(1).expandtabs(4)) > 0
        if not nested:
            inside = bullet.group(2).upper().startswith("MITRE ATT&CK")
        elif inside:
            tactics.append(bullet.group(2))
    return tactics


def _platform_line(content: str) -> str:
    match = re.search(r"^Platform:[ \t]*(.+?)[ \t]*$", content, re.MULTILINE)
    return match.group(1) if match else ""


def _platforms(file: SourceFile) -> tuple[str, ...]:
    """From the folder the page sits in, through the registry's `platform_folders` map."""
    folder = PurePosixPath(file.rel).parent.name
    folders = file.options.get("platform_folders", {})
    return normalize.platforms(folders.get(folder, [folder]))


def _clean(content: str) -> str:
    """Readable text: collapsed `???` blocks (raw logs) dropped, HTML tags and footnote marks gone."""
    kept: list[str] = []
    skipping = False
    for line in content.splitlines():
        if line.startswith("???"):
            skipping = True
            continue
        if skipping and (not line.strip() or line.startswith(("    ", "\t"))):
            continue
        skipping = False
        kept.append(line)
    body = _STYLE.sub("", "\n".join(kept))
    body = _HTML_TAG.sub("", body)
    body = _FOOTNOTE_REF.sub("", body)
    body = "\n".join(line.rstrip() for line in body.splitlines())
    return _BLANK_RUNS.sub("\n\n", body).strip()
