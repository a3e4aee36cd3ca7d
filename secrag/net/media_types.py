"""The media types of records' upstream forms (stored at publish, served by the upstream refetch): by a
file's extension, and how a parsed record is written back in its type."""

from __future__ import annotations

import json
import tomllib
from pathlib import PurePath
from typing import Any

import yaml

from secrag.errors import ParseError
from secrag.files import safe_json, safe_yaml

JSON = "application/json"
YAML = "application/yaml"
TOML = "application/toml"
TURTLE = "text/turtle"
TEXT = "text/plain"
# By extension (KAPE targets and modules are YAML).
BY_SUFFIX = {
    ".json": JSON,
    ".yml": YAML,
    ".yaml": YAML,
    ".tkape": YAML,
    ".mkape": YAML,
    ".toml": TOML,
    ".md": "text/markdown",
    ".ttl": TURTLE,
    ".jsonld": "application/ld+json",
    ".jsonl": "application/jsonl",
    ".pdf": "application/pdf",
    ".html": "text/html",
    ".htm": "text/html",
    ".txt": TEXT,
}


def of_path(path: str | PurePath) -> str:
    """The media type of a file by its extension (text/plain when unknown)."""
    return BY_SUFFIX.get(PurePath(path).suffix.lower(), TEXT)


def dump(value: Any, media_type: str) -> str:  # noqa: ANN401 - a parsed record
    """A parsed record written in its media type: text as it is, JSON as JSON, anything else as YAML."""
    if isinstance(value, str):
        return value
    if media_type == JSON:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False)


def load(text: str, media_type: str) -> Any:  # noqa: ANN401 - the record as data
    """The record as data when its type is structured (JSON, YAML, TOML; the loaders' limits apply), else
    None; None too when it does not parse."""
    try:
        if media_type == JSON:
            return safe_json.load(text)
        if media_type == YAML:
            docs = safe_yaml.load_all(text)
            return docs[0] if len(docs) == 1 else docs
        if media_type == TOML:
            return tomllib.loads(text)
    except (ParseError, ValueError, RecursionError):  # TOMLDecodeError is a ValueError; deep TOML recurses
        return None
    return None
