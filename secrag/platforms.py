"""The one platform vocabulary: what parsers map upstream platform names onto, and what filters accept."""

from __future__ import annotations

import re
from collections.abc import Iterable

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


def canonical(name: object) -> str | None:
    """The vocabulary's name for a platform name or alias (any case, spaces or underscores), else None."""
    key = re.sub(r"[\s_]+", " ", str(name).strip().lower())
    return _PLATFORM_ALIASES.get(key) or _PLATFORM_ALIASES.get(key.replace(" ", "_"))


def platform_names() -> tuple[str, ...]:
    """Every name a filter accepts as written in lower case: the vocabulary and its aliases (the
    OpenAPI enum; other casings and spacings of these are accepted too)."""
    return tuple(sorted(set(PLATFORMS) | set(_PLATFORM_ALIASES)))


def platforms(values: Iterable[object] | object) -> tuple[str, ...]:
    """Map upstream platform names onto the one vocabulary; unknown names are dropped."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        values = [values]
    found: set[str] = set()
    for value in values:
        if value is None:
            continue
        mapped = canonical(value)
        if mapped:
            found.add(mapped)
    return tuple(sorted(found))
