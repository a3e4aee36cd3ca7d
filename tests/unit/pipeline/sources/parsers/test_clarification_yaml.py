"""The curated clarifications: one record per entry, checked ids, techniques and references."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources.bundled import bundled_root
from pipeline.sources.parsers.clarification_yaml import parse
from pipeline.sources.records import SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError


def _file(data: bytes, root: Path = Path()) -> SourceFile:
    return SourceFile(source="clarifications", root=root, rel="clarifications.yaml", data=data)


def test_the_shipped_clarifications_parse() -> None:
    root = bundled_root(default_registry()["clarifications"])
    records = list(parse(_file((root / "clarifications.yaml").read_bytes(), root)))
    assert len(records) >= 12 and len({r.upstream_id for r in records}) == len(records)
    log = next(r for r in records if r.upstream_id == "CLAR-004")
    assert log.techniques == ("T1070.001",) and "clarification" in log.tags
    assert log.body.startswith("Misconception: ") and "\n\nClarification: " in log.body
    assert "https://attack.mitre.org/techniques/T1070/001/" in log.body
    assert all(r.raw and r.raw_media_type == "application/yaml" for r in records)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("clarifications: []", "non-empty"),
        ("clarifications: [{id: CLAR-001, title: t, misconception: m}]", "no clarification"),
        ("clarifications: [{id: C1, title: t, misconception: m, clarification: c}]", "not a new CLAR-NNN"),
        (
            "clarifications:\n"
            "  - {id: CLAR-001, title: t, misconception: m, clarification: c}\n"
            "  - {id: CLAR-001, title: u, misconception: m, clarification: c}\n",
            "not a new CLAR-NNN",
        ),
    ],
)
def test_malformed_entries_fail_the_file(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        list(parse(_file(text.encode())))
