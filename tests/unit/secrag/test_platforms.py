"""The one platform vocabulary."""

from __future__ import annotations

import pytest

from secrag.platforms import PLATFORMS, canonical, platforms


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("Windows", "windows"),
        ("WIN64", "windows"),
        ("Mac OS X", "macos"),
        ("k8s", "kubernetes"),
        ("Azure AD", "entra_id"),
        ("google_workspace", "google_workspace"),
        ("Office 365", "office365"),
        ("  linux ", "linux"),
    ],
)
def test_aliases_in_any_case_map_onto_the_vocabulary(typed: str, stored: str) -> None:
    assert canonical(typed) == stored and stored in PLATFORMS


def test_unknown_names_are_none_and_dropped_from_lists() -> None:
    assert canonical("Windoze") is None
    assert platforms(["Windows", "Windoze", None, "win32"]) == ("windows",)
    assert platforms("macOS") == ("macos",)


def test_every_listed_name_is_accepted() -> None:
    """The OpenAPI enum of the platform filter: each name maps onto the vocabulary."""
    from secrag.platforms import platform_names

    assert set(PLATFORMS) <= set(platform_names())
    assert all(canonical(name) in PLATFORMS for name in platform_names())
