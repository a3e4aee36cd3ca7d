"""docs/howto/add-source.md's worked example: its registry entry loads, and its sample page parses into
the record the page says."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import load_registry
from secrag.settings import REPO_ROOT

PAGE = (REPO_ROOT / "docs" / "howto" / "add-source.md").read_text(encoding="utf-8")


def _block(language: str) -> str:
    found = re.search(rf"^ *```{language}\n(.*?)^ *```", PAGE, re.MULTILINE | re.DOTALL)
    assert found, f"no {language} block"
    return re.sub(r"^ {3}", "", found.group(1), flags=re.MULTILINE)


def test_the_worked_example_loads_and_parses(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    registry.mkdir()
    (registry / "hunting_notes.yaml").write_text(_block("yaml"), encoding="utf-8")
    spec = load_registry(registry)["hunting_notes"]
    assert (spec.parser, spec.tracking, spec.poll_interval) == ("markdown_page", "commit", 3600)
    checkout = tmp_path / "hunting_notes"
    page = checkout / "hunts" / "windows" / "lsass-access.md"
    page.parent.mkdir(parents=True)
    page.write_text(_block("markdown"), encoding="utf-8")
    (checkout / "hunts" / "README.md").write_text("# Hunts\n\n## Hypothesis\n\nT1059\n", encoding="utf-8")
    (record,) = parse_source(spec, checkout, version="abc123").records
    assert record.doc_id == "hunting_notes:hunts/windows/lsass-access.md"
    assert record.title == "LSASS access by unsigned processes"
    assert tuple(record.techniques) == ("T1003.001",)
