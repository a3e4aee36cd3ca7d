"""The Velociraptor artifact parser on the real snapshot, plus the format's quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import velociraptor_artifact
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
DEFS = "velociraptor:artifacts/definitions"


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["velociraptor"], UPSTREAM / "velociraptor")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "artifacts/definitions/Generic/Test.yaml") -> SourceFile:
    return SourceFile(
        source="velociraptor",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        web_url="https://example.test/blob/master/{path}",
    )


OLD_STYLE = """\
name: Generic.Test.Queries
description: Uses the older `queries` list. See https://attack.mitre.org/techniques/T1059/004/
parameters:
  - name: Table
    default: |
      a,b
      {rows}
sources:
  - precondition: SELECT OS From info() where OS = 'darwin'
    queries:
      - LET x = SELECT * FROM info()
      - SELECT * FROM x
"""


# --- whole snapshot -------------------------------------------------------------------------


def test_counts(outcome: ParseOutcome) -> None:
    assert outcome.files_seen == 421
    assert len(outcome.records) == 421
    assert len(outcome.skipped) == 0
    # No ATT&CK field upstream; 24 artifacts name techniques in their description or references.
    assert outcome.with_techniques == 24


def test_platform_spread(outcome: ParseOutcome) -> None:
    counts: dict[str, int] = {}
    for record in outcome.records:
        for platform in record.platforms:
            counts[platform] = counts.get(platform, 0) + 1
    assert counts == {"windows": 203, "linux": 56, "macos": 21}


def test_prefetch_keeps_the_vql(by_id: dict[str, Record]) -> None:
    r = by_id[f"{DEFS}/Windows/Forensics/Prefetch.yaml"]
    assert r.title == "Windows.Forensics.Prefetch"
    assert r.url == (
        "https://github.com/Velocidex/velociraptor/blob/master/artifacts/definitions/Windows/Forensics/Prefetch.yaml"
    )
    assert r.platforms == ("windows",)
    assert r.techniques == ()
    assert "SELECT * FROM glob(globs=prefetchGlobs)" in r.body  # the source query
    assert "LET PrefetchProfile = '''[" in r.body  # the exported VQL
    assert "- prefetchGlobs [default: C:\\Windows\\Prefetch\\*.pf]" in r.body
    assert r.metadata["type"] == "CLIENT"


def test_wdigest_techniques_from_description(by_id: dict[str, Record]) -> None:
    r = by_id[f"{DEFS}/Windows/Registry/WDigest.yaml"]
    assert r.techniques == ("T1003.001", "T1112")
    assert 'AND KeyName =~ "UseLogonCredential|Negotiate"' in r.body


def test_linux_queries_list(by_id: dict[str, Record]) -> None:
    r = by_id[f"{DEFS}/Linux/Sys/Services.yaml"]
    assert r.platforms == ("linux",)
    assert "execve(argv=['systemctl', 'list-units',  '--type=service'])" in r.body
    assert r.metadata["implied_permissions"] == ["EXECVE"]


def test_metadata_is_json_serialisable(outcome: ParseOutcome) -> None:
    json.dumps([r.metadata for r in outcome.records])


# --- quirks ---------------------------------------------------------------------------------


def test_older_queries_list_precondition_os_and_long_defaults() -> None:
    rows = "\n      ".join(f"row{n},value{n}" for n in range(40))
    (record,) = velociraptor_artifact.parse(_file(OLD_STYLE.replace("{rows}", rows)))
    assert "LET x = SELECT * FROM info()\n\nSELECT * FROM x" in record.body
    assert record.platforms == ("macos",)  # `Generic.` name, darwin precondition
    assert record.techniques == ("T1059.004",)
    assert "row39" not in record.body  # a lookup-table default is not prose
    assert record.metadata["type"] == "CLIENT"


@pytest.mark.parametrize(
    "text, reason",
    [
        ("description: no name\n", "no name"),
        ("- a list\n", "mapping"),
        ("name: X\nsources: [\n", "invalid YAML"),
    ],
)
def test_bad_files_raise(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(velociraptor_artifact.parse(_file(text)))
