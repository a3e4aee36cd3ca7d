"""The MITRE CAR analytic parser on the real snapshot, plus format quirks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.sources.parsers import car_analytic
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def car() -> ParseOutcome:
    return parse_source(default_registry()["mitre_car"], UPSTREAM / "mitre_car")


def _by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "analytics/CAR-2099-01-001.yaml", page_url: str = "") -> SourceFile:
    return SourceFile(
        source="mitre_car",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        options={"page_url": page_url} if page_url else {},
        web_url="https://example.test/blob/master/{path}",
    )


ANALYTIC = """\
title: Test Analytic
submission_date: 2099/01/01
platforms: [Windows]
analytic_types: [TTP]
id: CAR-2099-01-001
description: Finds things; mentions T1105 in prose only.
coverage:
  - technique: T1003
    tactics: [TA0006]
    subtechniques: [T1003.001, T1003.002]
    coverage: Moderate
  - technique: T1059
    tactics: [TA0002]
    coverage: Low
implementations:
  - code: processes = search Process:Create
    type: pseudocode
"""


def test_counts(car: ParseOutcome) -> None:
    assert car.files_seen == 102
    assert len(car.records) == 102
    assert len(car.skipped) == 0
    assert car.with_techniques == 100  # CAR-2015-07-001 and CAR-2020-04-001 have no coverage
    assert all(re.match(r"^CAR-\d{4}-\d{2}-\d{3}$", r.upstream_id) for r in car.records)
    for record in car.records:
        json.dumps(dict(record.metadata))


def test_quick_execution_of_suspicious_commands(car: ParseOutcome) -> None:
    r = _by_id(car)["mitre_car:CAR-2013-04-002"]
    assert r.title == "Quick execution of a series of suspicious commands"
    assert r.url == "https://car.mitre.org/analytics/CAR-2013-04-002/"
    assert len(r.techniques) == 39  # 24 techniques plus 15 sub-techniques from coverage
    assert {"T1087", "T1087.001", "T1087.002", "T1543.003", "T1059.005"} <= set(r.techniques)
    assert r.platforms == ("linux", "macos", "windows")
    assert "reg_grouped = group reg by hostname, ppid" in r.body
    assert "Implementation (DNIF, Sysmon native):" in r.body
    assert "Commands:\nipconfig /all\nhostname" in r.body
    assert r.metadata["submission_date"] == "2013/04/11"
    assert r.metadata["d3fend"] == ["D3-PLA"]
    assert r.metadata["coverage"]["T1059"] == "Moderate"


def test_techniques_only_from_coverage(car: ParseOutcome) -> None:
    # The description links mimikatz (S0002) but the analytic maps no technique.
    r = _by_id(car)["mitre_car:CAR-2015-07-001"]
    assert r.title == "All Logins Since Last Boot"
    assert r.techniques == ()
    assert r.platforms == ("linux", "macos", "windows")


def test_inline_analytic() -> None:
    [r] = car_analytic.parse(_file(ANALYTIC, page_url="https://car.example/analytics/{id}/"))
    assert r.doc_id == "mitre_car:CAR-2099-01-001"
    assert r.techniques == ("T1003", "T1003.001", "T1003.002", "T1059")  # not T1105 from prose
    assert r.url == "https://car.example/analytics/CAR-2099-01-001/"
    assert r.metadata["tactics"] == ["TA0002", "TA0006"]
    assert r.tags == ("ttp",)


def test_without_page_url_the_repository_url_is_used() -> None:
    [r] = car_analytic.parse(_file(ANALYTIC))
    assert r.url == "https://example.test/blob/master/analytics/CAR-2099-01-001.yaml"


@pytest.mark.parametrize(
    ("platforms", "expected"),
    [
        ("[N/A]", ()),
        ("[Windows, Linux, macOS]", ("linux", "macos", "windows")),
        ("null", ()),
    ],
)
def test_platforms(platforms: str, expected: tuple[str, ...]) -> None:
    [r] = car_analytic.parse(_file(ANALYTIC.replace("[Windows]", platforms)))
    assert r.platforms == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("title: [unclosed\n", "invalid YAML"),
        ("- a list\n", "not a mapping"),
        (ANALYTIC.replace("CAR-2099-01-001", "CAR-99-1"), "not CAR-yyyy-mm-nnn"),
        (ANALYTIC.replace("title: Test Analytic\n", ""), "no title"),
    ],
)
def test_bad_files_raise_parse_error(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(car_analytic.parse(_file(text)))
