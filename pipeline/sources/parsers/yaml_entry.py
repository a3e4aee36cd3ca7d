"""Shared pieces of the one-entry-per-YAML-file parsers: loading, plain values, web URLs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from pipeline.sources.records import SourceFile
from secrag.errors import ParseError
from secrag.files import safe_yaml


def load_mapping(file: SourceFile) -> dict[str, Any]:
    """The file's single YAML document, which must be a mapping."""
    try:
        text = file.text()
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text: {exc.reason}") from exc
    doc = safe_yaml.load(text)
    if not isinstance(doc, dict):
        raise ParseError(f"expected a YAML mapping, found {type(doc).__name__}")
    return doc


def plain(value: Any) -> Any:  # noqa: ANN401 - mirrors arbitrary YAML
    """The value with dates as ISO strings and keys as strings, so it serialises as JSON."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def text(value: object) -> str:
    """A stripped string; empty for None (upstream leaves many fields blank)."""
    return "" if value is None else str(plain(value)).strip()


def texts(values: Iterable[object]) -> list[str]:
    """The non-empty stripped strings of the values."""
    return [t for t in (text(v) for v in values) if t]


def compact(meta: dict[str, Any]) -> dict[str, Any]:
    """Metadata without empty values, JSON-safe."""
    return {k: plain(v) for k, v in meta.items() if v not in (None, "", [], {}, ())}


def web_url(file: SourceFile) -> str:
    """The upstream web URL of the file (paths may hold `!`, `+` or spaces)."""
    return file.url_for(quote(file.rel))
