"""The OSSEM data-dictionary parser on the real OSSEM-DD snapshot: one record per event or table, each
field one line, its names kept as identifiers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline.sources.parsers import ossem_event
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["ossem_dd"], SNAPSHOT / "ossem_dd")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def test_every_event_file_is_a_record(outcome: ParseOutcome) -> None:
    assert len(outcome.records) == 1087
    assert [s.path for s in outcome.skipped] == ["zeek/miscellaneous/events/weird.yml"]  # no description, no fields
    products = Counter(r.metadata["product"] for r in outcome.records)
    assert products["osquery"] == 501 and products["Windows Security"] == 436 and products["Sysmon"] == 33
    assert products["Defender for Endpoint"] == 18 and products["Zeek"] == 44


def test_a_sysmon_event_lists_its_fields(by_id: dict[str, Record]) -> None:
    event = by_id["ossem_dd:windows/sysmon/events/event-1.yml"]
    assert event.title == "Sysmon (windows): Event ID 1: Process creation"
    assert event.platforms == ("windows",) and "sysmon" in event.tags
    assert "event id: 1 (version 5)" in event.body
    assert "- CommandLine (string): " in event.body and "CommandLine" in event.identifiers
    assert "- Image (string): File path of the process being spawned/created" in event.body
    assert event.metadata["log_source"] == "Microsoft-Windows-Sysmon"


def test_a_defender_table_and_an_osquery_table(by_id: dict[str, Record]) -> None:
    table = by_id["ossem_dd:windows/microsoftdefenderforendpoint/events/DeviceProcessEvents_v1.yml"]
    assert table.title.startswith("Defender for Endpoint (windows): DeviceProcessEvents")
    assert "InitiatingProcessCommandLine" in table.identifiers and "- ProcessCommandLine" in table.body
    processes = by_id["ossem_dd:linux/osquery/events/processes.yml"]
    assert processes.title == "osquery (linux): Processes Table"
    assert processes.platforms == ("linux",) and "- cmdline (TEXT): " in processes.body
    assert "TBD" not in processes.body  # OSSEM's placeholders are left out


def test_platforms_outside_the_vocabulary_are_mapped(by_id: dict[str, Record]) -> None:
    assert by_id["ossem_dd:freebsd/osquery/events/processes.yml"].platforms == ("unix",)
    assert by_id["ossem_dd:zeek/network-protocols/events/conn.yml"].platforms == ("network",)
    assert by_id["ossem_dd:aws/events/cloudtrail.yml"].title.startswith("AWS: ")


def test_an_event_without_fields_keeps_its_description(by_id: dict[str, Record]) -> None:
    error = by_id["ossem_dd:windows/sysmon/events/event-255.yml"]
    assert "error occurred within Sysmon" in error.body and "Fields:" not in error.body


def test_a_file_without_a_name_is_refused() -> None:
    file = SourceFile(source="ossem_dd", root=Path("/nonexistent"), rel="x/events/a.yml", data=b"description: d\n")
    with pytest.raises(ParseError, match="lacks a name"):
        list(ossem_event.parse(file))
