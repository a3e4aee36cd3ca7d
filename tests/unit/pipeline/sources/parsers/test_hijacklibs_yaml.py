"""The HijackLibs parser on the real snapshot, plus the format's quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import hijacklibs_yaml
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["hijacklibs"], UPSTREAM / "hijacklibs")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, options: dict | None = None) -> SourceFile:
    return SourceFile(
        source="hijacklibs",
        root=Path("/nonexistent"),
        rel="yml/test/test.yml",
        data=text.encode(),
        options=options or {},
        web_url="https://example.test/blob/main/{path}",
    )


ENTRY = """\
Name: test.dll
Author: Someone
Created: 2024-01-02
Vendor: Test Corp
VulnerableExecutables:
- Path: '%SYSTEM32%\\app.exe'
  Type: Environment Variable
  Variable: SYSTEMROOT
  AutoElevate: true
"""


# --- whole snapshot -------------------------------------------------------------------------


def test_counts(outcome: ParseOutcome) -> None:
    assert outcome.files_seen == 598
    assert len(outcome.records) == 598
    assert len(outcome.skipped) == 0
    assert outcome.with_techniques == 598  # every entry is DLL hijacking


def test_every_entry_maps_to_dll_hijacking(outcome: ParseOutcome) -> None:
    assert {r.techniques for r in outcome.records} == {("T1574.001", "T1574.002")}
    assert {r.platforms for r in outcome.records} == {("windows",)}


def test_winhttp(by_id: dict[str, Record]) -> None:
    r = by_id["hijacklibs:yml/microsoft/built-in/winhttp.yml"]
    assert r.title == "winhttp.dll"
    assert r.url == "https://github.com/wietze/HijackLibs/blob/main/yml/microsoft/built-in/winhttp.yml"
    assert "winhttp.dll (Microsoft): DLL hijacking (Sideloading)" in r.body
    assert "Expected locations: %SYSTEM32%, %SYSWOW64%" in r.body
    assert "- %SYSTEM32%\\msdt.exe (Sideloading; auto-elevates)" in r.body
    assert "MinecraftLauncher.exe" in r.body
    assert r.metadata["vendor"] == "Microsoft"
    assert r.metadata["created"] == "2021-02-27"
    assert r.tags == ("sideloading",)


def test_phantom_dll_with_cve(by_id: dict[str, Record]) -> None:
    r = by_id["hijacklibs:yml/3rd_party/npm/providers.yml"]
    assert r.title == "providers.dll"
    assert r.metadata["hijack_types"] == ["Phantom"]
    assert r.metadata["cves"] == ["CVE-2022-32223"]
    assert "Condition: Node.js versions earlier than 16.16.0" in r.body
    assert "Expected locations" not in r.body


def test_hijack_type_spread(outcome: ParseOutcome) -> None:
    counts: dict[str, int] = {}
    for record in outcome.records:
        for tag in record.tags:
            counts[tag] = counts.get(tag, 0) + 1
    assert counts == {"sideloading": 512, "environment variable": 89, "phantom": 18, "search order": 13}


def test_metadata_is_json_serialisable(outcome: ParseOutcome) -> None:
    json.dumps([r.metadata for r in outcome.records])


# --- quirks ---------------------------------------------------------------------------------


def test_techniques_come_from_the_registry_options() -> None:
    (without,) = hijacklibs_yaml.parse(_file(ENTRY))
    assert without.techniques == ()
    (configured,) = hijacklibs_yaml.parse(_file(ENTRY, {"techniques": ["T1574.001", "t1574.002"]}))
    assert configured.techniques == ("T1574.001", "T1574.002")


def test_environment_variable_entry() -> None:
    (record,) = hijacklibs_yaml.parse(_file(ENTRY))
    assert "(Environment Variable; variable %SYSTEMROOT%; auto-elevates)" in record.body
    assert record.metadata["auto_elevate"] == ["%SYSTEM32%\\app.exe"]
    assert record.metadata["created"] == "2024-01-02"


@pytest.mark.parametrize(
    "text, reason",
    [
        ("Name: x.dll\nVulnerableExecutables: []\n", "lacks"),
        ("Vendor: X\n", "lacks"),
        ("just text\n", "mapping"),
    ],
)
def test_bad_files_raise(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(hijacklibs_yaml.parse(_file(text)))


def test_the_dll_its_expected_paths_and_the_executables_are_artefacts() -> None:
    text = (
        "Name: Version.dll\nVendor: Microsoft\nExpectedLocations:\n- '%SYSTEM32%'\n- '%LOCALAPPDATA%\\Foo\\%VERSION%'\n"
        "VulnerableExecutables:\n- Path: '%SYSTEM32%\\Foo.exe'\n  Type: Sideloading\n  SHA256:\n  - " + "A" * 64 + "\n"
    )
    (record,) = hijacklibs_yaml.parse(_file(text))
    found = {(a.kind, a.field, a.key, a.pattern is not None) for a in record.artefacts}
    assert found == {
        ("file_name", "Name", "version.dll", False),
        ("path", "ExpectedLocations", "%system32%\\version.dll", False),
        ("path", "ExpectedLocations", "%localappdata%\\foo\\%version%\\version.dll", True),
        ("path", "VulnerableExecutables.Path", "%system32%\\foo.exe", False),
        ("file_name", "VulnerableExecutables.Path", "foo.exe", False),
        ("sha256", "VulnerableExecutables.SHA256", "a" * 64, False),
    }
