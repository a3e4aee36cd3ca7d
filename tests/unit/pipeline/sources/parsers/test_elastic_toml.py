"""The Elastic detection-rules TOML parser on the real snapshot, plus format quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import elastic_toml
from pipeline.sources.parsing import parse_source, select_files
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def elastic() -> ParseOutcome:
    return parse_source(default_registry()["elastic"], UPSTREAM / "elastic")


def _by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "rules/windows/test.toml") -> SourceFile:
    return SourceFile(
        source="elastic",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        web_url="https://example.test/blob/v1/{path}",
    )


RULE = """\
[metadata]
creation_date = "2024/01/02"
integration = ["endpoint"]
maturity = "production"

[rule]
author = ["Elastic"]
description = "Finds things."
language = "eql"
name = "Test Rule"
risk_score = 47
rule_id = "00000000-1111-2222-3333-444444444444"
severity = "medium"
tags = ["OS: Windows", "Tactic: Execution", "Mitre Atlas: T0086", "Technique: T1059"]
type = "eql"
query = '''
process where process.name == "cmd.exe"
'''

[[rule.threat]]
framework = "MITRE ATT&CK"
[[rule.threat.technique]]
id = "T1003"
name = "OS Credential Dumping"
[[rule.threat.technique.subtechnique]]
id = "T1003.001"
name = "LSASS Memory"
[rule.threat.tactic]
id = "TA0006"
name = "Credential Access"
"""


def test_counts(elastic: ParseOutcome) -> None:
    assert elastic.files_seen == 2068  # 2,192 TOML files less the 124 under rules/_deprecated/
    assert len(elastic.records) == 2068
    assert len(elastic.skipped) == 0
    assert elastic.with_techniques == 1983  # 95.9 %
    for record in elastic.records:
        json.dumps(dict(record.metadata))


def test_deprecated_folder_is_excluded_but_deprecated_in_a_name_is_not() -> None:
    root = UPSTREAM / "elastic"
    rels = {p.relative_to(root).as_posix() for p in select_files(default_registry()["elastic"], root)}
    assert not [r for r in rels if "/_deprecated/" in r]
    assert len(list((root / "rules" / "_deprecated").glob("*.toml"))) == 124
    # Live rules whose file name merely contains "deprecated" stay.
    assert "rules/integrations/aws/discovery_ec2_deprecated_ami_discovery.toml" in rels


def test_outlook_com_rule(elastic: ParseOutcome) -> None:
    r = _by_id(elastic)["elastic:1dee0500-4aeb-44ca-b24b-4a285d7b6ba1"]
    assert r.title == "Suspicious Inter-Process Communication via Outlook"
    assert r.url == (
        "https://github.com/elastic/detection-rules/blob/main/rules/windows/"
        "collection_email_outlook_mailbox_via_com.toml"
    )
    assert r.techniques == ("T1114", "T1114.001", "T1559", "T1559.001")
    assert r.platforms == ("windows",)
    assert 'process.name : "OUTLOOK.EXE"' in r.body
    assert r.body.startswith("Description: Detects Inter-Process Communication with Outlook")
    assert "### Investigating Suspicious Inter-Process Communication via Outlook" in r.body
    assert r.metadata["severity"] == "medium"
    assert r.metadata["tactics"] == ["TA0002", "TA0009"]
    assert "tactic: collection" in r.tags


def test_techniques_come_from_threat_not_tags(elastic: ParseOutcome) -> None:
    # Tags say "Mitre Atlas: T0086"; only [[rule.threat]] (T1071, T1071.004) counts.
    r = _by_id(elastic)["elastic:a1b2c3d4-e5f6-7890-abcd-ef1234567890"]
    assert r.title == "GenAI Process Connection to Suspicious Top Level Domain"
    assert r.techniques == ("T1071", "T1071.004")
    assert r.platforms == ("macos", "windows")


def test_building_block_and_ml_rules(elastic: ParseOutcome) -> None:
    records = _by_id(elastic)
    bb = records["elastic:d197478e-39f0-4347-a22f-ba654718b148"]
    assert bb.path.startswith("rules_building_block/")
    assert bb.metadata["building_block"] is True
    ml = records["elastic:78d3d8d9-b476-451d-a9e0-7a5addd70670"]
    assert ml.title == "Spike in AWS Error Messages"
    assert "Machine learning jobs: high_distinct_count_error_message" in ml.body
    assert "aws" in ml.platforms


def test_inline_rule() -> None:
    [r] = elastic_toml.parse(_file(RULE))
    assert r.doc_id == "elastic:00000000-1111-2222-3333-444444444444"
    assert r.techniques == ("T1003", "T1003.001")  # not T1059 nor T0086 from the tags
    assert r.platforms == ("windows",)
    assert 'Query (eql):\nprocess where process.name == "cmd.exe"' in r.body
    assert r.url == "https://example.test/blob/v1/rules/windows/test.toml"
    assert r.metadata["tactics"] == ["TA0006"]


def test_other_frameworks_are_ignored() -> None:
    text = RULE.replace('framework = "MITRE ATT&CK"', 'framework = "MITRE ATLAS"')
    [r] = elastic_toml.parse(_file(text))
    assert r.techniques == ()


def test_threshold_rule_body() -> None:
    text = RULE.replace('type = "eql"', 'type = "threshold"') + (
        '\n[rule.threshold]\nfield = ["host.id"]\nvalue = 25\n'
    )
    [r] = elastic_toml.parse(_file(text))
    assert "Threshold: field: host.id, value: 25" in r.body


def test_deprecated_maturity_yields_nothing() -> None:
    assert list(elastic_toml.parse(_file(RULE.replace('"production"', '"deprecated"')))) == []


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[rule\nname = 1", "invalid TOML"),
        ("[metadata]\nmaturity = 'production'\n", "no \\[rule\\] table"),
        ("[rule]\nname = 'x'\n", "no rule_id"),
    ],
)
def test_bad_files_raise_parse_error(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(elastic_toml.parse(_file(text)))
