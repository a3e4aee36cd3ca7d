"""docs/tutorials/mcp-coverage.md's own lines, run as written: the page's MCP client asks a loopback API over
streamable HTTP for a group's coverage, page by page, and an unknown group is an error it prints."""

from __future__ import annotations

from pathlib import Path

from .doc_pages import run_page

PAGE = "tutorials/mcp-coverage.md"


def test_the_tutorial_runs_as_written(live_api: str, tmp_path: Path) -> None:
    _, group, unknown = run_page(PAGE, tmp_path, api=live_api)
    lines = group.splitlines()
    assert lines[-1].startswith("no detection:") and len(lines) > 2
    assert all(line.split()[1:4:2] == ["detections", "tests"] for line in lines[:-1])
    assert "G9999" in unknown
