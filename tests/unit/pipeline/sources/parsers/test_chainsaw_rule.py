"""The Chainsaw rule parser on the real snapshot, including the upstream file that is not YAML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import chainsaw_rule
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
BROKEN = "rules/mft/netexec_mft.yml"


@pytest.fixture(scope="module")
def chainsaw() -> ParseOutcome:
    return parse_source(default_registry()["chainsaw"], UPSTREAM / "chainsaw")


def _by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "rules/evtx/test.yml") -> SourceFile:
    return SourceFile(
        source="chainsaw",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        options={"platforms": ["windows"]},
        web_url="https://example.test/blob/master/{path}",
    )


RULE = """\
title: Test Rule
group: Testing
description: Finds things
authors:
  - someone
kind: evtx
level: high
status: stable
timestamp: Event.System.TimeCreated
fields:
  - name: Event ID
    to: Event.System.EventID
filter:
  condition: a
  a:
    Event.System.EventID: 4720
"""


def test_counts(chainsaw: ParseOutcome) -> None:
    # 127 *.yml + 4 *.yaml rule files; one of them is invalid YAML upstream.
    assert chainsaw.files_seen == 131
    assert len(chainsaw.records) == 130
    assert len(chainsaw.skipped) == 1
    assert chainsaw.with_techniques == 6  # only titles like "T1562.001 - ..." name a technique


def test_invalid_upstream_file_is_skipped_and_counted(chainsaw: ParseOutcome) -> None:
    [skipped] = chainsaw.skipped
    assert skipped.path == BROKEN
    assert skipped.reason.startswith("invalid YAML at line 44")
    assert not [r for r in chainsaw.records if r.path == BROKEN]


def test_invalid_upstream_file_raises_parse_error_alone() -> None:
    data = (UPSTREAM / "chainsaw" / BROKEN).read_bytes()
    with pytest.raises(ParseError, match="invalid YAML"):
        list(chainsaw_rule.parse(SourceFile(source="chainsaw", root=UPSTREAM / "chainsaw", rel=BROKEN, data=data)))


def test_ids_are_paths_because_rules_have_no_id(chainsaw: ParseOutcome) -> None:
    assert all(r.upstream_id == r.path for r in chainsaw.records)
    assert all(r.platforms == ("windows",) for r in chainsaw.records)
    for record in chainsaw.records:
        json.dumps(dict(record.metadata))


def test_yaml_suffix_rules_are_included(chainsaw: ParseOutcome) -> None:
    r = _by_id(chainsaw)["chainsaw:rules/evtx/rdp_attacks/event_id_1149.yaml"]
    assert r.metadata["kind"] == "evtx"


def test_kerberoasting_rule(chainsaw: ParseOutcome) -> None:
    r = _by_id(chainsaw)["chainsaw:rules/evtx/credential_access/kerberoasting_administrator.yml"]
    assert r.title == "Kerberos service ticket requested for Administrator"
    assert r.url == (
        "https://github.com/WithSecureLabs/chainsaw/blob/master/"
        "rules/evtx/credential_access/kerberoasting_administrator.yml"
    )
    assert r.techniques == ()
    assert r.platforms == ("windows",)
    assert "Event.System.EventID: 4769" in r.body
    assert "Group: Credential Access" in r.body
    assert r.metadata["level"] == "critical"
    assert r.tags == ("credential access", "evtx")


def test_technique_in_title_and_spaces_in_url(chainsaw: ParseOutcome) -> None:
    rel = "rules/evtx/defense_evasion/T1562.001 - Sysmon Service was Disabled.yml"
    r = _by_id(chainsaw)[f"chainsaw:{rel}"]
    assert r.techniques == ("T1562.001",)
    assert r.url.endswith("/rules/evtx/defense_evasion/T1562.001%20-%20Sysmon%20Service%20was%20Disabled.yml")


def test_aggregate_and_mft_rules(chainsaw: ParseOutcome) -> None:
    records = _by_id(chainsaw)
    brute = next(r for r in records.values() if r.title == "Account Brute Force")
    assert "Aggregate:\ncount: '>5'" in brute.body
    action1 = records["chainsaw:rules/mft/action1_mft.yml"]
    assert action1.metadata["kind"] == "mft"
    assert "i*/action1_agent.exe*" in action1.body


def test_inline_rule_and_date_metadata() -> None:
    [r] = chainsaw_rule.parse(_file(RULE + "date: 2023-07-03\nversion: 1.0\n"))
    assert r.doc_id == "chainsaw:rules/evtx/test.yml"
    assert r.metadata["date"] == "2023-07-03"
    assert r.metadata["authors"] == ["someone"]
    assert "Fields: Event ID (Event.System.EventID)" in r.body
    assert r.platforms == ("windows",)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("title: [unclosed\n", "invalid YAML"),
        ("- a list\n", "not a mapping"),
        ("group: x\nfilter: {}\n", "no title"),
        ("title: x\nkind: evtx\n", "no filter"),
    ],
)
def test_bad_files_raise_parse_error(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(chainsaw_rule.parse(_file(text)))


def test_deprecated_rule_yields_nothing() -> None:
    assert list(chainsaw_rule.parse(_file(RULE.replace("status: stable", "status: deprecated")))) == []
