"""STIX field values as document text: readable prose, labelled sections, compact metadata."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from ... import normalize

_CITATION = re.compile(r"\s*\(Citation:[^)]*\)")
_CODE = re.compile(r"</?code>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
_BLOCK_END = re.compile(r"</(?:p|li|h\d|tr|div|ol|ul|table)>|<br\s*/?>", re.IGNORECASE)
_LINK = re.compile(r"\[([^\[\]]+)\]\(\s*https?://[^)\s]*\s*\)")


def clean(text: object, markup: bool = False) -> str:
    """Readable prose: no citation markers, `<code>` as backticks; with markup, no (X)HTML tags.

    ATT&CK prose is Markdown where `<placeholder>` can be real text, so only CAPEC strips tags.
    """
    if text is None:
        return ""
    value = _CODE.sub("`", _CITATION.sub("", str(text)))
    if markup and "<" in value:
        value = _TAG.sub(" ", _BLOCK_END.sub("\n", value))
        value = "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in html.unescape(value).splitlines())
        value = re.sub(r"\n{2,}", "\n", value)
    return value.strip()


def plain_links(text: str) -> str:
    """Markdown links as their text: `[APT29](https://attack.mitre.org/groups/G0016)` reads "APT29".

    The URLs carry ATT&CK ids (`techniques/T1059/001`) that enrichment would read as technique labels.
    """
    return _LINK.sub(r"\1", text)


def section(label: str, value: object, markup: bool = False) -> str:
    """ "Label: text" for a non-empty value; lists become one item per line."""
    if isinstance(value, Mapping):
        value = [f"{k}: {', '.join(map(str, normalize.as_list(v)))}" for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        items = [i for i in (clean(v, markup) for v in value) if i]
        return f"{label}:\n" + "\n".join(f"- {i}" for i in items) if items else ""
    text = clean(value, markup)
    return f"{label}: {text}" if text else ""


def compact(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata without empty values."""
    return {k: v for k, v in metadata.items() if v not in (None, "", [], {})}
