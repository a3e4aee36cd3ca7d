"""The title and text of one user-document file, by its format: Markdown, plain text, JSON and JSON
Lines (through the sources' hardened JSON reader), YAML (checked by the hardened YAML reader), HTML
(without scripts and styles) and PDF (pypdf, not encrypted)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import NamedTuple

from secrag.errors import ParseError
from secrag.files import safe_json, safe_yaml

_MD_TITLE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _text(data: bytes) -> str:
    return data.decode("utf-8-sig", errors="strict")


class Extracted(NamedTuple):
    """A file's title and text; for a PDF, each page with text as (page number, offset of its text in
    `body`), so a chunk's citation can name its pages."""

    title: str
    body: str
    page_starts: tuple[tuple[int, int], ...] = ()


def extract(rel: str, data: bytes) -> Extracted:
    """The title and text of one file by its suffix; ParseError when it cannot be read."""
    suffix = Path(rel).suffix.lower()
    stem = Path(rel).stem
    try:
        if suffix == ".pdf":
            return _pdf(data, stem)
        if suffix in {".html", ".htm"}:
            return Extracted(*_html(data, stem))
        text = _text(data)
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    return Extracted(*_text_file(suffix, stem, text))


def _text_file(suffix: str, stem: str, text: str) -> tuple[str, str]:
    if suffix == ".json":
        return stem, json.dumps(safe_json.load(text), indent=2, ensure_ascii=False)
    if suffix == ".jsonl":
        lines = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    lines.append(json.dumps(safe_json.load(line), ensure_ascii=False))
                except ParseError as exc:
                    raise ParseError(f"line {n}: {exc.reason}") from exc
        return stem, "\n\n".join(lines)
    if suffix in {".yaml", ".yml"}:
        safe_yaml.load_all(text)  # the sources' hardened reader: depth, alias and size limits
        return stem, text
    if suffix == ".md":
        match = _MD_TITLE.search(text)
        return (match.group(1) if match else stem), text
    return stem, text


def _pdf(data: bytes, stem: str) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ParseError("encrypted PDF")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        title = str((reader.metadata.get("/Title") if reader.metadata else None) or "").strip()
    except ParseError:
        raise
    except (PdfReadError, Exception) as exc:  # noqa: BLE001 - any pypdf failure is one bad file
        raise ParseError(f"unreadable PDF: {type(exc).__name__}: {exc}"[:300]) from exc
    body, starts = "", []
    for number, page in enumerate(pages, start=1):
        if page:
            body += "\n\n" if body else ""
            starts.append((number, len(body)))
            body += page
    return Extracted(title or stem, body, tuple(starts))


def _html(data: bytes, stem: str) -> tuple[str, str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    lines = [ln.strip() for ln in soup.get_text("\n").splitlines()]
    return title or stem, "\n".join(ln for ln in lines if ln)
