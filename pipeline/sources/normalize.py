"""Normalisation shared by every parser: technique ids, platforms, tags, text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from secrag.enrichment import technique_mentions

# One platform vocabulary for every source.
PLATFORMS = (
    "windows",
    "linux",
    "macos",
    "aws",
    "azure",
    "gcp",
    "cloud",
    "kubernetes",
    "containers",
    "saas",
    "office365",
    "google_workspace",
    "entra_id",
    "network",
    "iaas",
    "esxi",
    "android",
    "ios",
    "ics",
    "web",
    "unix",
    "any",
)
_PLATFORM_ALIASES = {
    "windows": "windows",
    "win": "windows",
    "win32": "windows",
    "win64": "windows",
    "microsoft windows": "windows",
    "linux": "linux",
    "macos": "macos",
    "mac os": "macos",
    "mac os x": "macos",
    "macosx": "macos",
    "osx": "macos",
    "darwin": "macos",
    "mac": "macos",
    "aws": "aws",
    "amazon web services": "aws",
    "amazon": "aws",
    "azure": "azure",
    "azure ad": "entra_id",
    "azuread": "entra_id",
    "entra id": "entra_id",
    "entra-id": "entra_id",
    "entra_id": "entra_id",
    "identity provider": "entra_id",
    "gcp": "gcp",
    "google cloud": "gcp",
    "google cloud platform": "gcp",
    "cloud": "cloud",
    "iaas": "iaas",
    "kubernetes": "kubernetes",
    "k8s": "kubernetes",
    "containers": "containers",
    "container": "containers",
    "docker": "containers",
    "saas": "saas",
    "office 365": "office365",
    "office365": "office365",
    "o365": "office365",
    "m365": "office365",
    "microsoft 365": "office365",
    "google workspace": "google_workspace",
    "gsuite": "google_workspace",
    "network": "network",
    "network devices": "network",
    "esxi": "esxi",
    "vmware": "esxi",
    "android": "android",
    "ios": "ios",
    "ics": "ics",
    "web": "web",
    "unix": "unix",
    "any": "any",
}


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


def platforms(values: Iterable[object] | object) -> tuple[str, ...]:
    """Map upstream platform names onto the one vocabulary; unknown names are dropped."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        values = [values]
    found: set[str] = set()
    for value in values:
        if value is None:
            continue
        key = re.sub(r"[\s_]+", " ", str(value).strip().lower())
        mapped = _PLATFORM_ALIASES.get(key) or _PLATFORM_ALIASES.get(key.replace(" ", "_"))
        if mapped:
            found.add(mapped)
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
