"""The GTFOBins parser on the real snapshot, plus front-matter, alias and context quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsers import gtfobins_frontmatter
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    return parse_source(default_registry()["gtfobins"], UPSTREAM / "gtfobins")


@pytest.fixture(scope="module")
def by_id(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def _file(text: str, rel: str = "_gtfobins/tool") -> SourceFile:
    return SourceFile(
        source="gtfobins",
        root=Path("/nonexistent"),
        rel=rel,
        data=text.encode(),
        options={"platforms": ["linux", "unix"]},
        web_url="https://example.test/blob/master/{path}",
    )


# --- whole snapshot -------------------------------------------------------------------------


def test_counts(outcome: ParseOutcome) -> None:
    assert outcome.files_seen == 478  # files have no suffix; `_gtfobins/*` finds them all
    assert len(outcome.records) == 478
    assert len(outcome.skipped) == 0
    # GTFOBins carries no ATT&CK ids and SOURCES.md names no place to take them from.
    assert outcome.with_techniques == 0


def test_alias_stubs_are_pointer_records(outcome: ParseOutcome, by_id: dict[str, Record]) -> None:
    aliases = [r for r in outcome.records if "alias_of" in r.metadata]
    assert len(aliases) == 20
    apt = by_id["gtfobins:_gtfobins/apt"]
    assert apt.title == "apt"
    assert apt.metadata == {"alias_of": "apt-get"}
    assert "alias of apt-get" in apt.body
    assert apt.tags == ("alias",)
    # Every alias points at an entry that exists.
    assert all(f"gtfobins:_gtfobins/{r.metadata['alias_of']}" in by_id for r in aliases)


def test_gdb_contexts(by_id: dict[str, Record]) -> None:
    r = by_id["gtfobins:_gtfobins/gdb"]
    assert r.title == "gdb"
    assert r.url == "https://github.com/GTFOBins/GTFOBins.github.io/blob/master/_gtfobins/gdb"
    assert r.platforms == ("linux", "unix")
    assert r.techniques == ()
    assert r.metadata["functions"] == ["file-write", "inherit", "shell"]
    assert r.metadata["contexts"] == ["capabilities", "sudo", "suid", "unprivileged"]
    assert "Function shell [capabilities (CAP_SETUID), sudo, suid (shell), unprivileged]" in r.body
    assert "gdb -nx -ex '!/bin/sh' -ex quit" in r.body
    # The capabilities context has its own code, kept next to the generic one.
    assert "In the capabilities context:\ngdb -nx -ex 'python import os; os.setuid(0)'" in r.body
    assert {"sudo", "suid", "shell"} <= set(r.tags)


def test_suffixed_name_and_comment(by_id: dict[str, Record]) -> None:
    ld = by_id["gtfobins:_gtfobins/ld.so"]
    assert ld.title == "ld.so"
    busybox = by_id["gtfobins:_gtfobins/busybox"]
    assert "busybox --list-full" in busybox.body  # top-level comment
    assert "(listener: tcp-server)" in busybox.body
    assert "(from: ash)" in busybox.body


def test_metadata_is_json_serialisable(outcome: ParseOutcome) -> None:
    json.dumps([r.metadata for r in outcome.records])


# --- quirks ---------------------------------------------------------------------------------

OLD_STYLE = """\
---
functions:
  sudo:
    - code: sudo tool
---
Markdown text after the front matter is not YAML.
"""

CURRENT_STYLE = """\
---
functions:
  shell:
  - code: |-
      tool -e /bin/sh
    contexts:
      sudo:
      suid:
        shell: true
      unprivileged:
...
"""


@pytest.mark.parametrize("text", [OLD_STYLE, CURRENT_STYLE])
def test_both_front_matter_closers(text: str) -> None:
    (record,) = gtfobins_frontmatter.parse(_file(text))
    assert record.upstream_id == "_gtfobins/tool"
    assert record.metadata["functions"]


def test_contexts_render_with_their_notes() -> None:
    (record,) = gtfobins_frontmatter.parse(_file(CURRENT_STYLE))
    assert "Function shell [sudo, suid (shell), unprivileged]" in record.body
    assert record.metadata["contexts"] == ["sudo", "suid", "unprivileged"]


@pytest.mark.parametrize(
    "text, reason",
    [
        ("functions: {}\n", "front matter"),
        ("---\nfunctions: {}\n...\n", "neither functions nor alias"),
        ("---\n- a list\n...\n", "not a mapping"),
        ("---\nfunctions:\n  shell:\n  - just text\n...\n", "non-mapping example"),
    ],
)
def test_bad_files_raise(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        list(gtfobins_frontmatter.parse(_file(text)))


def test_the_name_is_an_artefact_matched_exactly(by_id: dict[str, Record]) -> None:
    (name,) = by_id["gtfobins:_gtfobins/bash"].artefacts
    assert (name.kind, name.field, name.key, name.folded) == ("file_name", "name", "bash", False)
