"""The ForensicArtifacts parser on the real snapshot, plus multi-document and OS quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import forensic_artifact
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["forensic_artifacts"], UPSTREAM / "forensic_artifacts")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "artifacts/data/test.yaml") -> SourceFile:
    return SourceFile(
        source="forensic_artifacts",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        web_url="https://example.test/blob/main/{path}",
    )


TWO_ARTIFACTS = """\
# Comment before the first document.
---
name: TestMacFile
doc: A macOS file.
sources:
- type: FILE
  attributes: {paths: ['/Library/test.plist']}
supported_os: [Darwin]
---
name: TestCommand
doc: |
  A command.

  With a longer explanation.
sources:
- type: COMMAND
  attributes:
    cmd: /usr/bin/tool
    args: ['-a', '--list']
  supported_os: [Linux]
- type: ARTIFACT_GROUP
  attributes: {names: [TestMacFile]}
supported_os: [ESXi]
"""


# --- whole snapshot -------------------------------------------------------------------------


def test_counts(outcome: ParseOutcome) -> None:
    # 32 multi-document files hold 731 artifact definitions.
    assert outcome.files_seen == 32
    assert len(outcome.records) == 731
    assert len(outcome.skipped) == 0
    assert outcome.with_techniques == 0  # artifact definitions carry no ATT&CK mapping


def test_ids_are_artifact_names(outcome: ParseOutcome) -> None:
    # One file holds many artifacts, so the file path cannot be the id; the name is unique upstream.
    assert all(r.upstream_id == r.title and "/" not in r.upstream_id for r in outcome.records)
    assert len({r.path for r in outcome.records}) == 32


def test_darwin_means_macos(outcome: ParseOutcome) -> None:
    counts: dict[str, int] = {}
    for record in outcome.records:
        for platform in record.platforms:
            counts[platform] = counts.get(platform, 0) + 1
    assert counts == {"windows": 385, "linux": 249, "macos": 215, "esxi": 16}
    assert sum(1 for r in outcome.records if not r.platforms) == 3


def test_prefetch(by_id: dict[str, Record]) -> None:
    r = by_id["forensic_artifacts:WindowsPrefetchFiles"]
    assert r.title == "WindowsPrefetchFiles"
    assert r.url == ("https://github.com/ForensicArtifacts/artifacts/blob/main/artifacts/data/windows.yaml")
    assert r.path == "artifacts/data/windows.yaml"
    assert r.platforms == ("windows",)
    assert "WindowsPrefetchFiles: Windows Prefetch files." in r.body
    assert "%%environ_systemroot%%\\Prefetch\\*.pf" in r.body
    assert r.metadata["source_types"] == ["FILE"]


def test_registry_values_and_per_source_os(by_id: dict[str, Record]) -> None:
    action = by_id["forensic_artifacts:WindowsActionCenterSettings"]
    assert "Kovter" in action.body
    assert "Windows.SystemToast.SecurityAndMaintenance -> Enabled" in action.body
    crowdstrike = by_id["forensic_artifacts:CrowdstrikeAgentID"]
    assert crowdstrike.platforms == ("linux", "macos", "windows")
    assert "- COMMAND (Linux)\n  /opt/CrowdStrike/falconctl -g --cid --aid" in crowdstrike.body


def test_metadata_is_json_serialisable(outcome: ParseOutcome) -> None:
    json.dumps([r.metadata for r in outcome.records])


# --- quirks ---------------------------------------------------------------------------------


def test_multi_document_file() -> None:
    mac, command = forensic_artifact.parse(_file(TWO_ARTIFACTS))
    assert mac.doc_id == "forensic_artifacts:TestMacFile"
    assert mac.platforms == ("macos",)
    assert command.platforms == ("esxi", "linux")  # artifact OS plus a source's own OS
    assert "/usr/bin/tool -a --list" in command.body
    assert "- ARTIFACT_GROUP\n  TestMacFile" in command.body
    assert "With a longer explanation." in command.body


def test_ids_do_not_depend_on_document_order() -> None:
    first, second = TWO_ARTIFACTS.split("---\n")[1:]
    forward = {r.doc_id: r.content_hash for r in forensic_artifact.parse(_file(TWO_ARTIFACTS))}
    swapped = {r.doc_id: r.content_hash for r in forensic_artifact.parse(_file(f"---\n{second}---\n{first}"))}
    assert forward == swapped


@pytest.mark.parametrize(
    "text, reason",
    [
        ("# only a comment\n", "no artifact definition"),
        ("---\ndoc: no name\nsources: []\n", "with a name"),
        ("---\nname: X\ndoc: no sources\n", "no sources"),
        ("---\n- a list\n", "with a name"),
    ],
)
def test_bad_files_raise(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(forensic_artifact.parse(_file(text)))
