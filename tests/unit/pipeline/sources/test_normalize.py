"""Normalisation tables: technique ids and platforms."""

from __future__ import annotations

import pytest

from pipeline.sources.normalize import platforms, technique_ids


@pytest.mark.parametrize(
    "values, expected",
    [
        (["attack.t1003.001", "attack.credential_access"], ("T1003.001",)),
        ("T1059", ("T1059",)),
        (["t1059/001", "T1059.001"], ("T1059.001",)),
        (["no id", None, 42], ()),
        (["T10031"], ()),
    ],
)
def test_technique_ids(values: object, expected: tuple[str, ...]) -> None:
    assert technique_ids(values) == expected


@pytest.mark.parametrize(
    "values, expected",
    [
        (["Windows", "windows"], ("windows",)),
        (["Darwin"], ("macos",)),
        (["macOS", "Linux"], ("linux", "macos")),
        (["Azure AD"], ("entra_id",)),
        (["Office 365", "IaaS"], ("iaas", "office365")),
        (["unknown-os"], ()),
    ],
)
def test_platforms(values: list[str], expected: tuple[str, ...]) -> None:
    assert platforms(values) == expected


def test_atlas_ids_are_not_attack_ids() -> None:
    # the same reading as query-time enrichment: AML.T0051 is ATLAS, not ATT&CK T0051
    assert technique_ids(["AML.T0051", "see T1059"]) == ("T1059",)
