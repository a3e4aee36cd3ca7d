"""The Splunk security_content detection parser on the real snapshot, plus format quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import splunk_detection
from pipeline.sources.parsing import parse_source, select_files
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def splunk() -> ParseOutcome:
    return parse_source(default_registry()["splunk_security"], UPSTREAM / "splunk_security")


def _by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "detections/endpoint/test.yml") -> SourceFile:
    return SourceFile(
        source="splunk_security",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        web_url="https://example.test/blob/v4/{path}",
    )


DETECTION = """\
name: Test Detection
id: 00000000-1111-2222-3333-444444444444
version: 1
date: '2024-10-17'
author: Someone
type: TTP
status: production
data_source:
- Sysmon EventID 1
description: Finds things.
search: '| tstats count from datamodel=Endpoint.Processes | `test_filter`'
how_to_implement: Ingest Sysmon.
known_false_positives: Admins.
references: []
tags:
  analytic_story:
  - Test Story
  mitre_attack_id:
  - T1059.001
  security_domain: endpoint
"""


def test_counts(splunk: ParseOutcome) -> None:
    assert splunk.files_seen == 1613
    assert len(splunk.records) == 1613
    assert len(splunk.skipped) == 0
    assert splunk.with_techniques == 1588  # 98.4 %
    for record in splunk.records:
        json.dumps(dict(record.metadata))


def test_only_detections_are_parsed(splunk: ParseOutcome) -> None:
    assert (UPSTREAM / "splunk_security" / "stories").is_dir()
    assert all(r.path.startswith("detections/") for r in splunk.records)


def test_deprecated_folder_is_excluded(tmp_path: Path) -> None:
    for folder in ("endpoint", "deprecated"):
        (tmp_path / "detections" / folder).mkdir(parents=True)
        (tmp_path / "detections" / folder / "x.yml").write_text(DETECTION)
    rels = [p.relative_to(tmp_path).as_posix() for p in select_files(default_registry()["splunk_security"], tmp_path)]
    assert rels == ["detections/endpoint/x.yml"]


def test_3cx_detection(splunk: ParseOutcome) -> None:
    r = _by_id(splunk)["splunk_security:791b727c-deec-4fbe-a732-756131b3c5a1"]
    assert r.title == "3CX Supply Chain Attack Network Indicators"
    assert r.url == (
        "https://github.com/splunk/security_content/blob/develop/detections/endpoint/"
        "3cx_supply_chain_attack_network_indicators.yml"
    )
    assert r.techniques == ("T1195.002",)
    assert r.platforms == ("windows",)  # from the data source "Sysmon EventID 22"
    assert "lookup 3cx_ioc_domains domain as query" in r.body
    assert "Data sources: Sysmon EventID 22" in r.body
    assert r.metadata["cve"] == ["CVE-2023-29059"]
    assert r.metadata["date"] == "2024-10-17"
    assert "3cx supply chain attack" in r.tags


def test_cloud_detections(splunk: ParseOutcome) -> None:
    records = _by_id(splunk)
    aws = records["splunk_security:4d347c4a-306e-41db-8d10-b46baf71b3e2"]
    assert aws.title == "AWS Credential Access GetPasswordData"
    assert aws.techniques == ("T1110", "T1110.001", "T1586", "T1586.003")
    assert aws.platforms == ("aws",)
    entra = records["splunk_security:5521f8c5-1aa3-473c-9eb7-853701924a06"]
    assert entra.platforms == ("entra_id",)  # "Azure Active Directory" data source
    no_source = records["splunk_security:e6f1bb1b-f441-492b-9126-902acda217da"]
    assert no_source.platforms == ()  # data_source: [] upstream


def test_inline_detection() -> None:
    [r] = splunk_detection.parse(_file(DETECTION))
    assert r.doc_id == "splunk_security:00000000-1111-2222-3333-444444444444"
    assert r.techniques == ("T1059.001",)
    assert r.platforms == ("windows",)
    assert "Search (SPL):\n| tstats count from datamodel=Endpoint.Processes" in r.body
    assert r.tags == ("test story", "ttp")
    assert r.url == "https://example.test/blob/v4/detections/endpoint/test.yml"


def test_deprecated_status_yields_nothing() -> None:
    assert list(splunk_detection.parse(_file(DETECTION.replace("production", "deprecated")))) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Sysmon for Linux EventID 1", ("linux",)),
        ("Sysmon EventID 13", ("windows",)),
        ("Windows Event Log Security 4688", ("windows",)),
        ("Azure Active Directory Add member to role", ("entra_id",)),
        ("Azure Audit Create or Update an Azure Automation account", ("azure",)),
        ("O365 UserLoggedIn", ("office365",)),
        ("G Suite Gmail", ("google_workspace",)),
        ("CrowdStrike ProcessRollup2", ()),
    ],
)
def test_data_source_platforms(source: str, expected: tuple[str, ...]) -> None:
    [r] = splunk_detection.parse(_file(DETECTION.replace("Sysmon EventID 1", source)))
    assert r.platforms == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: [unclosed\n", "invalid YAML"),
        ("- a list\n", "not a mapping"),
        ("name: No id\nsearch: x\n", "no id or name"),
    ],
)
def test_bad_files_raise_parse_error(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(splunk_detection.parse(_file(text)))
