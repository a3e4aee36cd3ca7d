"""docs/tutorials/report-to-layer.md's own lines, run as written against the serving corpus: the report maps to
its techniques (the CLI in process, the API over HTTP), and the map's layer minus the rules' layer leaves the
techniques no rule detects."""

from __future__ import annotations

import json
from pathlib import Path

from .doc_pages import run_page

PAGE = "tutorials/report-to-layer.md"


def test_the_tutorial_runs_as_written(live_api: str, serving_db_url: str, tmp_path: Path) -> None:
    run_page(PAGE, tmp_path, api=live_api, env={"DATABASE_URL": serving_db_url})
    layer = json.loads((tmp_path / "report-layer.json").read_text(encoding="utf-8"))
    assert layer["versions"]["layer"] == "4.5" and layer["domain"] == "enterprise-attack"
    uncovered = json.loads((tmp_path / "uncovered-layer.json").read_text(encoding="utf-8"))
    assert "T1003.001" not in {t["techniqueID"] for t in uncovered["techniques"]}  # the rule covers it
    assert {"T1059.001", "T1218.011"} <= {t["techniqueID"] for t in uncovered["techniques"]}
