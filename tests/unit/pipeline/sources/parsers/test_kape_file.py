"""The KAPE target/module parser on the real KapeFiles snapshot, plus the format's quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import kape_file
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["kape"], UPSTREAM / "kape")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "Targets/Test/Test.tkape") -> SourceFile:
    return SourceFile(
        source="kape",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode("utf-8"),
        options={"platforms": ["windows"]},
        web_url="https://example.test/blob/master/{path}",
    )


TARGET = """\
Description: Test files
Author: Someone
Version: 1.0
Id: 11111111-2222-3333-4444-555555555555
RecreateDirectories: true
Targets:
    -
        Name: Test
        Category: Logs
        Path: C:\\Test\\
        FileMask: '*.log'
        Recursive: true
        Comment: "Logs of the test tool"

# Documentation
# https://example.test/doc
"""


# --- whole snapshot -------------------------------------------------------------------------


def test_counts(outcome: ParseOutcome) -> None:
    # 377 targets + 453 modules upstream; 11 targets and 13 modules sit under `!Disabled`.
    assert outcome.files_seen == 806
    assert len(outcome.records) == 806
    assert len(outcome.skipped) == 0
    assert outcome.with_techniques == 0  # KAPE files carry no ATT&CK mapping
    kinds = [r.metadata["kind"] for r in outcome.records]
    assert kinds.count("target") == 366
    assert kinds.count("module") == 440


def test_disabled_folders_are_excluded(outcome: ParseOutcome) -> None:
    assert not any("!Disabled" in r.path for r in outcome.records)
    # A leading `!` outside `!Disabled` is just KAPE's sort-first convention.
    assert any(r.path == "Modules/Compound/!EZParser.mkape" for r in outcome.records)


def test_prefetch_target(by_id: dict[str, Record]) -> None:
    r = by_id["kape:Targets/Windows/Prefetch.tkape"]
    assert r.title == "Prefetch"
    assert r.url == "https://github.com/EricZimmerman/KapeFiles/blob/master/Targets/Windows/Prefetch.tkape"
    assert r.platforms == ("windows",)
    assert r.techniques == ()
    assert "Prefetch (KAPE target): Prefetch files" in r.body
    assert "- Prefetch [Prefetch]: C:\\Windows\\prefetch\\ (files: *.pf)" in r.body
    # Documentation links live in YAML comments; they are kept as notes.
    assert "https://www.sans.org/blog/device-profiling-with-windows-prefetch" in r.body
    assert r.metadata["id"] == "f6715d3f-b8ca-4cc2-9e5e-4ed18e88abbe"
    assert r.metadata["version"] == "1.0"


def test_pecmd_module(by_id: dict[str, Record]) -> None:
    r = by_id["kape:Modules/EZTools/PECmd.mkape"]
    assert r.title == "PECmd"
    assert "PECmd.exe -d %sourceDirectory% --csv %destinationDirectory% --mp -q (csv)" in r.body
    assert r.metadata["binary_url"] == "https://download.ericzimmermanstools.com/PECmd.zip"
    assert r.tags == ("module", "programexecution")


def test_special_characters_in_paths_are_url_quoted(by_id: dict[str, Record]) -> None:
    r = by_id["kape:Modules/Compound/!EZParser.mkape"]
    assert r.url.endswith("/Modules/Compound/%21EZParser.mkape")
    assert r.path == "Modules/Compound/!EZParser.mkape"


def test_metadata_is_json_serialisable(outcome: ParseOutcome) -> None:
    json.dumps([r.metadata for r in outcome.records])


# --- quirks ---------------------------------------------------------------------------------


def test_target_file() -> None:
    (record,) = kape_file.parse(_file(TARGET))
    assert record.upstream_id == "Targets/Test/Test.tkape"
    assert "- Test [Logs]: C:\\Test\\ (files: *.log) (recursive)\n  Logs of the test tool" in record.body
    assert "Notes:\nDocumentation\nhttps://example.test/doc" in record.body
    assert record.metadata["kind"] == "target"


def test_byte_order_mark_is_accepted() -> None:
    file = _file(TARGET)
    with_bom = SourceFile(
        source=file.source,
        root=file.root,
        rel=file.rel,
        data=b"\xef\xbb\xbf" + file.data,
        options=file.options,
        web_url=file.web_url,
    )
    (record,) = kape_file.parse(with_bom)
    assert record.title == "Test"


@pytest.mark.parametrize(
    "text, rel, reason",
    [
        (TARGET, "Targets/Test/Test.yaml", "suffix"),
        ("Description: x\nTargets: []\n", "Targets/T.tkape", "no Targets"),
        ("Description: x\nProcessors:\n", "Modules/M.mkape", "no Processors"),
        ("Description: [unclosed\n", "Targets/T.tkape", "invalid YAML"),
    ],
)
def test_bad_files_raise(text: str, rel: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(kape_file.parse(_file(text, rel)))
