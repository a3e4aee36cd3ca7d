"""The Markdown page parser on the real Stratus Red Team docs, plus page-shape quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import markdown_page
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
DOCS = "stratus_red_team:docs/attack-techniques"
OPTIONS = {
    "page_marker": "^Platform:",
    "technique_sections": ["Mappings"],
    "platform_folders": {"AWS": ["aws"], "EKS": ["aws", "kubernetes"], "entra-id": ["entra_id"]},
}


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["stratus_red_team"], UPSTREAM / "stratus_red_team")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "docs/attack-techniques/AWS/aws.test.page.md") -> SourceFile:
    return SourceFile(
        source="stratus_red_team",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        options=OPTIONS,
        web_url="https://example.test/blob/v1/{path}",
    )


PAGE = """\
---
title: Test Technique
---

# Test Technique

 <span class="smallcaps w3-badge w3-blue" title="x">slow</span> 

Platform: AWS

## Mappings

- MITRE ATT&CK
    - Persistence
    - Privilege Escalation

- Threat Technique Catalog for AWS:
    - [Valid Accounts: IAM Users](https://example.test/T1078.A001.html) (T1078.A001)

## Description

Does a <code>thing</code>[^1]. Not a mapping: T1105 in prose.

!!! note

    Keep this note.

## Detonation logs <span class="w3-badge">new!</span>

- `iam:CreateUser`

??? "View raw detonation logs"

    ```json
    {"secret": "raw log"}
    ```

[^1]: A footnote.
"""


# --- whole snapshot -------------------------------------------------------------------------


def test_counts(outcome: ParseOutcome) -> None:
    # 112 pages: 101 techniques plus 11 index and overview pages, which yield nothing.
    assert outcome.files_seen == 112
    assert len(outcome.records) == 101
    assert len(outcome.skipped) == 0
    # Only 28 pages name technique ids (AWS threat catalog mappings, attack.mitre.org links).
    assert outcome.with_techniques == 28


def test_index_pages_are_not_records(outcome: ParseOutcome) -> None:
    names = {Path(r.path).name for r in outcome.records}
    assert not names & {
        "index.md",
        "list.md",
        "philosophy.md",
        "supported-platforms.md",
        "mitre-attack-coverage-matrices.md",
    }


def test_platform_from_folder(outcome: ParseOutcome) -> None:
    counts: dict[tuple[str, ...], int] = {}
    for record in outcome.records:
        counts[record.platforms] = counts.get(record.platforms, 0) + 1
    assert counts == {
        ("aws",): 44,
        ("gcp",): 25,
        ("azure",): 15,
        ("kubernetes",): 8,
        ("entra_id",): 7,
        ("aws", "kubernetes"): 2,
    }


def test_every_page_has_tactics(outcome: ParseOutcome) -> None:
    assert all(r.metadata.get("tactics") for r in outcome.records)


def test_ec2_password_data(by_id: dict[str, Record]) -> None:
    r = by_id[f"{DOCS}/AWS/aws.credential-access.ec2-get-password-data.md"]
    assert r.title == "Retrieve EC2 Password Data"
    assert r.url == (
        "https://github.com/DataDog/stratus-red-team/blob/main/docs/attack-techniques/"
        "AWS/aws.credential-access.ec2-get-password-data.md"
    )
    assert r.platforms == ("aws",)
    assert r.techniques == ()
    assert r.metadata["tactics"] == ["Credential Access"]
    assert r.metadata["badges"] == ["idempotent"]
    assert "stratus detonate aws.credential-access.ec2-get-password-data" in r.body
    assert "- `ec2:GetPasswordData`" in r.body
    assert "errorMessage" not in r.body  # the raw detonation logs are dropped
    assert "<span" not in r.body


def test_aws_catalog_mapping(by_id: dict[str, Record]) -> None:
    r = by_id[f"{DOCS}/AWS/aws.persistence.iam-backdoor-role.md"]
    assert r.title == "Backdoor an IAM Role"
    assert r.techniques == ("T1098.003",)
    assert r.metadata["tactics"] == ["Persistence"]


def test_attack_link_and_eks(by_id: dict[str, Record]) -> None:
    gcp = by_id[f"{DOCS}/GCP/gcp.lateral-movement.add-sshkey-instance-metadata.md"]
    assert gcp.techniques == ("T1098.004",)
    assert gcp.platforms == ("gcp",)
    eks = by_id[f"{DOCS}/EKS/eks.lateral-movement.create-access-entry.md"]
    assert eks.platforms == ("aws", "kubernetes")
    assert eks.metadata["platform"] == "EKS"


def test_metadata_is_json_serialisable(outcome: ParseOutcome) -> None:
    json.dumps([r.metadata for r in outcome.records])


# --- quirks ---------------------------------------------------------------------------------


def test_technique_page() -> None:
    (record,) = markdown_page.parse(_file(PAGE))
    assert record.title == "Test Technique"
    assert record.upstream_id == "docs/attack-techniques/AWS/aws.test.page.md"
    assert record.techniques == ("T1078",)  # catalog sub-ids (.A001) fall back to the technique
    assert record.metadata["tactics"] == ["Persistence", "Privilege Escalation"]
    assert record.metadata["badges"] == ["slow"]  # `new!` marks a section, not the page
    assert record.metadata["page_id"] == "aws.test.page"
    assert "Does a thing." in record.body
    assert "Keep this note." in record.body
    assert "raw log" not in record.body


def test_index_page_yields_nothing() -> None:
    index = _file("# AWS\n\n- [A](./a.md)\n", "docs/attack-techniques/AWS/index.md")
    assert list(markdown_page.parse(index)) == []


def test_heading_is_the_title_without_front_matter() -> None:
    (record,) = markdown_page.parse(
        _file("# From Heading\n\nPlatform: Entra ID\n", "docs/attack-techniques/entra-id/x.md")
    )
    assert record.title == "From Heading"
    assert record.platforms == ("entra_id",)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("---\n- a\n---\nPlatform: AWS\n", "front matter"),
        ("Platform: AWS\nno heading\n", "neither"),
    ],
)
def test_bad_pages_raise(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(markdown_page.parse(_file(text)))
