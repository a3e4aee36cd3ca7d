"""The Sigma-format parser on the real SigmaHQ and Hayabusa snapshots, plus format quirks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.sources.parsers import sigma_rule
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def sigma() -> ParseOutcome:
    return parse_source(default_registry()["sigma"], UPSTREAM / "sigma")


@pytest.fixture(scope="module")
def hayabusa() -> ParseOutcome:
    return parse_source(default_registry()["hayabusa"], UPSTREAM / "hayabusa")


def _by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "rules/test/rule.yml", source: str = "sigma") -> SourceFile:
    return SourceFile(
        source=source,
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        web_url="https://example.test/blob/master/{path}",
    )


RULE = """\
title: Test Rule
id: 11111111-2222-3333-4444-555555555555
status: test
description: Finds things
date: 2024-01-02
tags:
  - attack.execution
  - attack.T1059.001
  - car.2013-05-009
logsource:
  product: windows
  category: process_creation
detection:
  selection:
    Image|endswith: '\\\\cmd.exe'
  condition: selection
falsepositives:
  - Admins
level: high
"""


# --- whole snapshot -------------------------------------------------------------------------


def test_sigma_counts(sigma: ParseOutcome) -> None:
    assert sigma.files_seen == 3780
    assert len(sigma.records) == 3780
    assert len(sigma.skipped) == 0
    assert sigma.with_techniques == 3309  # 87.5 % of rules carry attack.tXXXX tags


def test_hayabusa_counts(hayabusa: ParseOutcome) -> None:
    # 193 files hold 196 documents; the 3 status: deprecated rules yield nothing.
    assert hayabusa.files_seen == 193
    assert len(hayabusa.records) == 193
    assert len(hayabusa.skipped) == 0
    assert hayabusa.with_techniques == 36


def test_ids_are_rule_uuids_not_positions(sigma: ParseOutcome, hayabusa: ParseOutcome) -> None:
    assert all(UUID.match(r.upstream_id) for r in sigma.records)
    # Two Hayabusa rules carry malformed UUIDs upstream; they are kept verbatim, never replaced.
    odd = {r.upstream_id for r in hayabusa.records if not UUID.match(r.upstream_id)}
    assert odd == {"a6a0d64-75d1-433a-b415-4123bab080ec", "b27292f1a-18b3-4433-b340-151874a7d4e8"}


def test_metadata_is_json_serialisable(sigma: ParseOutcome, hayabusa: ParseOutcome) -> None:
    for outcome in (sigma, hayabusa):
        for record in outcome.records:
            json.dumps(dict(record.metadata))


def test_sigma_procdump_lsass(sigma: ParseOutcome) -> None:
    r = _by_id(sigma)["sigma:5afee48e-67dd-4e03-a783-f74259dcf998"]
    assert r.title == "Potential LSASS Process Dump Via Procdump"
    assert r.url == (
        "https://github.com/SigmaHQ/sigma/blob/master/rules/windows/process_creation/"
        "proc_creation_win_sysinternals_procdump_lsass.yml"
    )
    assert r.techniques == ("T1003.001", "T1036")
    assert r.platforms == ("windows",)
    assert "CommandLine|contains|windash:" in r.body
    assert "Log source: category: process_creation, product: windows" in r.body
    assert "- Another tool that uses command line flags similar to ProcDump" in r.body
    assert r.metadata["level"] == "high"
    assert r.metadata["status"] == "stable"
    assert r.metadata["date"] == "2018-10-30"
    assert r.metadata["logsource"] == {"category": "process_creation", "product": "windows"}
    assert "car.2013-05-009" in r.tags


def test_sigma_cloud_and_saas_platforms(sigma: ParseOutcome) -> None:
    records = _by_id(sigma)
    aws = records["sigma:4db60cc0-36fb-42b7-9b58-a5b53019fb74"]
    assert aws.title == "AWS CloudTrail Important Change"
    assert aws.platforms == ("aws",)
    assert aws.techniques == ("T1685.002",)
    assert "StopLogging" in aws.body
    okta = records["sigma:b6c718dd-8f53-4b9f-98d8-93fdca966969"]
    assert okta.platforms == ("saas",)  # okta is not in the vocabulary; mapped locally
    assert okta.techniques == ()  # only a tactic tag


def test_techniques_come_from_tags_only(sigma: ParseOutcome) -> None:
    # The AS-REP roasting rule has no tags; a reference URL names t1558.004 and must not count.
    r = _by_id(sigma)["sigma:3e2f1b2c-4d5e-11ee-be56-0242ac120002"]
    assert r.techniques == ()
    assert any("t1558.004" in ref for ref in r.metadata["references"])


def test_hayabusa_correlation_rule(hayabusa: ParseOutcome) -> None:
    records = _by_id(hayabusa)
    corr = records["hayabusa:0ae09af3-f30f-47c2-a31c-83e0b918eeee"]
    assert corr.title == "User Guessing"
    assert corr.url == (
        "https://github.com/Yamato-Security/hayabusa-rules/blob/main/hayabusa/builtin/"
        "Security/LogonLogoff/Logon/Sec_4625_Med_LogonFail_UserGuessing_Correlation.yml"
    )
    assert corr.techniques == ("T1110.003",)
    assert corr.platforms == ("windows",)  # inherited from the correlated rule's logsource
    assert "type: value_count" in corr.body
    assert "Correlated rule Failed Logon - Non-Existent User:" in corr.body
    assert "EventID: 4625" in corr.body
    assert corr.metadata["rule_type"] == "correlation"
    base = records["hayabusa:b2c74582-0d44-49fe-8faa-014dcdafee62"]
    assert base.title == "Failed Logon - Non-Existent User"
    assert base.path == corr.path
    assert base.techniques == ()


def test_hayabusa_deprecated_rules_are_dropped(hayabusa: ParseOutcome) -> None:
    assert not [r for r in hayabusa.records if r.path.endswith("_Deprecated.yml")]
    assert all(r.metadata["status"] != "deprecated" for r in hayabusa.records)


def test_hayabusa_sysmon_rule(hayabusa: ParseOutcome) -> None:
    r = _by_id(hayabusa)["hayabusa:f03e34c4-6432-4a30-9ae2-76ae6329399a"]
    assert r.title == "Possible Timestomping"
    assert r.techniques == ("T1070.006",)
    assert r.platforms == ("windows",)
    assert r.metadata["ruletype"] == "Hayabusa"


def test_empty_checkout_fails_the_source(tmp_path: Path) -> None:
    (tmp_path / "moved").mkdir()
    with pytest.raises(ParseError, match="no files match"):
        parse_source(default_registry()["sigma"], tmp_path)


# --- format quirks on tiny inputs -----------------------------------------------------------


def test_inline_rule() -> None:
    [r] = sigma_rule.parse(_file(RULE))
    assert r.doc_id == "sigma:11111111-2222-3333-4444-555555555555"
    assert r.techniques == ("T1059.001",)
    assert r.tags == ("attack.execution", "attack.t1059.001", "car.2013-05-009")
    assert r.url == "https://example.test/blob/master/rules/test/rule.yml"
    assert r.metadata["date"] == "2024-01-02"  # a YAML date becomes an ISO string
    assert r.metadata["falsepositives"] == ["Admins"]
    assert r.path == "rules/test/rule.yml"


def test_rule_without_id_uses_the_path() -> None:
    [r] = sigma_rule.parse(_file(RULE.replace("id: 11111111-2222-3333-4444-555555555555\n", "")))
    assert r.upstream_id == "rules/test/rule.yml"


def test_unnamed_id_less_rules_in_a_multi_document_file_use_their_name() -> None:
    text = RULE + "---\n" + RULE.replace("id: 11111111-2222-3333-4444-555555555555", "name: base")
    ids = [r.upstream_id for r in sigma_rule.parse(_file(text))]
    assert ids == ["11111111-2222-3333-4444-555555555555", "rules/test/rule.yml#base"]


def test_url_path_is_percent_encoded() -> None:
    [r] = sigma_rule.parse(_file(RULE, rel="rules/a b/rule.yml"))
    assert r.url == "https://example.test/blob/master/rules/a%20b/rule.yml"


@pytest.mark.parametrize("status", ["deprecated", "Deprecated"])
def test_deprecated_rule_yields_nothing(status: str) -> None:
    assert list(sigma_rule.parse(_file(RULE.replace("status: test", f"status: {status}")))) == []


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no YAML document"),
        ("title: [unclosed\n", "invalid YAML"),
        ("- just\n- a list\n", "not a mapping"),
        ("title: No logic\nid: x\n", "neither detection nor correlation"),
        ("id: x\ndetection:\n  condition: x\n", "no title"),
    ],
)
def test_bad_files_raise_parse_error(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(sigma_rule.parse(_file(text)))


@pytest.mark.parametrize(
    ("logsource", "expected"),
    [
        ("product: windows", ("windows",)),
        ("product: m365", ("office365",)),
        ("product: okta", ("saas",)),
        ("product: zeek", ("network",)),
        ("category: webserver", ("web",)),
        ("category: proxy", ("network",)),
        ("service: nginx", ("web",)),
        ("product: jvm", ()),
    ],
)
def test_logsource_platforms(logsource: str, expected: tuple[str, ...]) -> None:
    text = RULE.replace("  product: windows\n  category: process_creation\n", f"  {logsource}\n")
    [r] = sigma_rule.parse(_file(text))
    assert r.platforms == expected
