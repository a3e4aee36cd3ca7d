"""Normalisation shared by every parser: technique ids, platforms, tags, text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from secrag.enrichment import technique_mentions
from secrag.platforms import platforms  # noqa: F401 - the parsers call normalize.platforms


def technique_ids(values: Iterable[object] | object) -> tuple[str, ...]:
    """Every ATT&CK technique id found in the values, as `T1234` / `T1234.001`, sorted, unique.

    Accepts `attack.t1003.001`, `T1003.001`, `t1003`, `T1003/001` and free text that names them.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        values = [values]
    found: set[str] = set()
    for value in values:
        if value is not None:
            found.update(technique_mentions(str(value)))  # the same reading as enrichment
    return tuple(sorted(found))


def tags(values: Iterable[object] | object) -> tuple[str, ...]:
    """Lower-cased, stripped, unique, sorted tags."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        values = [values]
    return tuple(sorted({str(v).strip().lower() for v in values if v is not None and str(v).strip()}))


def as_mapping(value: object) -> Mapping[str, Any]:
    """The value when it is a mapping, else an empty one (upstream fields are sometimes absent or scalar)."""
    return value if isinstance(value, dict) else {}


def as_mappings(value: object) -> list[Mapping[str, Any]]:
    """The mappings among a scalar, a list or None; other items are dropped."""
    return [v for v in as_list(value) if isinstance(v, dict)]


def as_list(value: object) -> list[object]:
    """A list from a scalar, a list or None (upstream YAML mixes all three)."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    return [value]


def join_text(*parts: object) -> str:
    """Join non-empty text parts with blank lines, the body shape every parser uses."""
    out = []
    for part in parts:
        if part is None:
            continue
        text = str(part).strip()
        if text:
            out.append(text)
    return "\n\n".join(out)
