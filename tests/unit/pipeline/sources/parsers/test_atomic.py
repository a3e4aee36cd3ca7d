"""The Atomic Red Team parser on the real snapshot, plus format quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import atomic
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def atomics() -> ParseOutcome:
    return parse_source(default_registry()["atomic"], UPSTREAM / "atomic")


def _by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "atomics/T1059.001/T1059.001.yaml") -> SourceFile:
    return SourceFile(
        source="atomic",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        web_url="https://example.test/blob/master/{path}",
    )


TECHNIQUE = """\
attack_technique: T1059.001
display_name: "Command and Scripting Interpreter: PowerShell"
atomic_tests:
- name: First test
  auto_generated_guid: 00000000-1111-2222-3333-444444444444
  description: Runs a thing.
  supported_platforms:
  - windows
  input_arguments:
    target:
      description: What to run
      type: string
      default: calc.exe
  executor:
    command: |
      Start-Process #{target}
    name: powershell
- name: Second test
  auto_generated_guid: 55555555-1111-2222-3333-444444444444
  description: Runs another thing.
  supported_platforms:
  - iaas:gcp
  - azure-ad
  executor:
    steps: Click the button.
    name: manual
"""


def test_counts(atomics: ParseOutcome) -> None:
    assert atomics.files_seen == 341
    assert len(atomics.records) == 1819
    assert len(atomics.skipped) == 0
    assert atomics.with_techniques == 1819  # every test maps to its file's technique
    for record in atomics.records:
        json.dumps(dict(record.metadata))


def test_procdump_lsass(atomics: ParseOutcome) -> None:
    r = _by_id(atomics)["atomic:0be2230c-9ab3-4ac2-8826-3199b9a0ebf8"]
    assert r.title == "Dump LSASS.exe Memory using ProcDump"
    assert r.url == ("https://github.com/redcanaryco/atomic-red-team/blob/master/atomics/T1003.001/T1003.001.yaml")
    assert r.techniques == ("T1003.001",)
    assert r.platforms == ("windows",)
    # `#{arg}` placeholders stay as text, with the argument defaults listed.
    assert '"#{procdump_exe}" -accepteula -ma lsass.exe #{output_file}' in r.body
    assert (
        "- output_file (path): Path where resulting dump should be placed "
        "[default: C:\\Windows\\Temp\\lsass_dump.dmp]" in r.body
    )
    assert "Executor: command_prompt (elevation required)" in r.body
    assert "Technique: T1003.001 OS Credential Dumping: LSASS Memory" in r.body
    assert r.metadata["executor"] == "command_prompt"
    assert r.metadata["input_arguments"] == ["output_file", "procdump_exe"]


def test_manual_test_keeps_its_steps(atomics: ParseOutcome) -> None:
    r = _by_id(atomics)["atomic:dea6c349-f1c6-44f3-87a1-1ed33a59a607"]
    assert r.title == "Dump LSASS.exe Memory using Windows Task Manager"
    assert "Steps:\n1. Open Task Manager:" in r.body
    assert r.tags == ("manual",)


def test_cloud_platforms(atomics: ParseOutcome) -> None:
    records = _by_id(atomics)
    aws = records["atomic:8822c3b0-d9f9-4daf-a043-49f110a31122"]
    assert aws.platforms == ("aws", "iaas")  # upstream says iaas:aws
    assert aws.techniques == ("T1098",)
    assert "aws iam create-group --group-name #{username}" in aws.body
    entra = records["atomic:0e65ae27-5385-46b4-98ac-607a8ee82261"]
    assert entra.platforms == ("entra_id",)  # upstream says azure-ad


def test_inline_file_yields_one_record_per_test() -> None:
    first, second = atomic.parse(_file(TECHNIQUE))
    assert first.doc_id == "atomic:00000000-1111-2222-3333-444444444444"
    assert second.doc_id == "atomic:55555555-1111-2222-3333-444444444444"
    assert first.techniques == second.techniques == ("T1059.001",)
    assert "Command:\nStart-Process #{target}" in first.body
    assert "- target (string): What to run [default: calc.exe]" in first.body
    assert second.platforms == ("entra_id", "gcp", "iaas")
    assert "Steps:\nClick the button." in second.body
    assert first.url == "https://example.test/blob/master/atomics/T1059.001/T1059.001.yaml"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("attack_technique: [unclosed\n", "invalid YAML"),
        ("- a list\n", "not a mapping"),
        ("display_name: x\natomic_tests: []\n", "no attack_technique"),
        ("attack_technique: T1059\natomic_tests: {}\n", "atomic_tests is not a list"),
        (
            TECHNIQUE.replace("  auto_generated_guid: 00000000-1111-2222-3333-444444444444\n", ""),
            "has no auto_generated_guid",
        ),
        ("attack_technique: T1059\natomic_tests:\n- just text\n", "not a mapping with a name"),
    ],
)
def test_bad_files_raise_parse_error(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(atomic.parse(_file(text)))
