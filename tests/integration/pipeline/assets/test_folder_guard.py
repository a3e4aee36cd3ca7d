"""`folders/<name>`'s shrink guard through real Dagster materializations of a real folder: a folder that served
documents and lists none (an unmounted mount point) is refused until the run forces it, and so is one that
shrinks past SECRAG_FOLDER_MAX_SHRINK; the reason is in the run (failure and check metadata) and in
/v1/sources, and nothing served before is removed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from pipeline.assets.keys import NO_SHRINK, NON_EMPTY
from pipeline.folders import FolderSpec
from pipeline.sources.mirror import Mirror
from secrag.error_kinds import MESSAGES
from secrag.settings import get_settings
from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.plugins.graph import Harness, harness

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")
KEY = "key:folders/team_docs"
NODE = "folders__team_docs"
FORCE = {"ops": {NODE: {"config": {"force": True}}}}
FILES = ("a.md", "b.md", "c.md", "d.md")


@pytest.fixture
def served(tmp_path: Path, db_url: str, mirror: Mirror, small_specs: Any) -> tuple[Harness, Path]:  # noqa: ANN401
    """team_docs, a public folder, published once with four documents."""
    root = (tmp_path / "mnt" / "docs").resolve()
    root.mkdir(parents=True)
    for name in FILES:
        (root / name).write_text(f"# {name}\ntext of {name}\n")
    h = harness(db_url, mirror, tmp_path / "work", small_specs, folders=[FolderSpec(name="team_docs", path=root)])
    h.materialize(KEY)
    return h, root


@pytest.fixture
def api(db_url: str) -> Iterator[TestClient]:
    settings = ServingSettings(_env_file=None, database_url=db_url, warm_up=False, result_cache_size=0)  # type: ignore[call-arg]
    with TestClient(create_app(settings)) as client:
        yield client


def _documents(h: Harness) -> list[str]:
    with h.connect() as conn:
        rows = conn.execute("SELECT doc_id FROM documents WHERE source = 'team_docs' ORDER BY doc_id").fetchall()
    return [r[0] for r in rows]


def _failure(result: dg.ExecuteInProcessResult) -> tuple[str, dict[str, Any]]:
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    data = failure.event_specific_data.user_failure_data
    return data.description, {k: v.value for k, v in data.metadata.items()}


def _checks(result: dg.ExecuteInProcessResult) -> dict[str, tuple[bool, str]]:
    evaluations = result.get_asset_check_evaluations()
    return {e.check_name: (e.passed, e.severity.value) for e in evaluations}


def _listed(api: TestClient) -> dict[str, Any]:
    sources = {s["name"]: s for s in api.get("/v1/sources").json()["sources"]}
    return sources["team_docs"]


def test_an_emptied_folder_is_refused_until_forced(served: tuple[Harness, Path], api: TestClient) -> None:
    h, root = served
    before = _documents(h)
    assert len(before) == len(FILES) and _listed(api)["state"] == "ok"
    for name in FILES:  # what an unmounted mount point lists: its empty directory
        (root / name).unlink()

    refused = h.materialize(KEY, raise_on_error=False)
    assert not refused.success
    message, facts = _failure(refused)
    assert f"folder team_docs: lists no documents where it served {len(FILES)}" in message
    assert "force: true" in message
    assert (facts["error_kind"], facts["records"], facts["previous_records"]) == ("empty", 0, len(FILES))
    assert _checks(refused)[NON_EMPTY] == (False, "ERROR")
    assert _documents(h) == before  # nothing served before is removed
    listed = _listed(api)
    assert (listed["state"], listed["error_kind"], listed["last_error"]) == ("refused", "empty", MESSAGES["empty"])
    assert listed["records"] == len(FILES)

    forced = h.materialize(KEY, run_config=FORCE)
    assert forced.success and _documents(h) == []
    assert _checks(forced)[NON_EMPTY] == (False, "WARN")  # reported, not blocking
    again = h.materialize(KEY)  # a folder that serves nothing publishes its empty listing as it is
    assert again.success and _documents(h) == []
    (root / "a.md").write_text("# back\n")
    assert h.materialize(KEY).success and _documents(h) == ["team_docs:a.md"]
    assert _listed(api)["state"] == "ok"


def test_a_folder_shrinking_past_its_setting_is_refused_until_forced(
    served: tuple[Harness, Path], api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    h, root = served
    before = _documents(h)
    monkeypatch.setenv("SECRAG_FOLDER_MAX_SHRINK", "0.5")
    get_settings.cache_clear()
    try:
        (root / "a.md").unlink()
        assert h.materialize(KEY).success  # a quarter of them gone: within the limit
        kept = _documents(h)
        assert kept == ["team_docs:b.md", "team_docs:c.md", "team_docs:d.md"]
        (root / "c.md").write_text("# c\nedited\n")
        (root / "b.md").unlink()
        (root / "d.md").unlink()
        (root / "e.txt").write_text("")  # a file without text is no document
        refused = h.materialize(KEY, raise_on_error=False)
        assert not refused.success
        message, facts = _failure(refused)
        assert "folder team_docs: shrank from 3 to 1 records (more than 50%)" in message
        assert (facts["error_kind"], facts["max_shrink"]) == ("shrank", 0.5)
        assert _checks(refused)[NO_SHRINK] == (False, "ERROR")
        assert _documents(h) == kept
        listed = _listed(api)
        assert (listed["state"], listed["error_kind"]) == ("refused", "shrank")
        assert h.materialize(KEY, run_config=FORCE).success
        assert _documents(h) == ["team_docs:c.md"]  # (e.txt holds no text: skipped)
    finally:
        get_settings.cache_clear()
    assert len(before) == len(FILES)


def test_secrag_backfill_forces_a_folder_through_its_refresh_job(
    served: tuple[Harness, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run config `secrag backfill team_docs --force` submits, run as the named job it submits to."""
    from secrag.errors import ConfigError
    from secrag_cli.backfill import backfill_config

    h, root = served
    folders = tmp_path / "folders.yaml"
    folders.write_text(f"folders:\n  - name: team_docs\n    path: {root}\n    public: true\n", encoding="utf-8")
    monkeypatch.setenv("SECRAG_FOLDERS_FILE", str(folders))
    get_settings.cache_clear()
    try:
        assert backfill_config("team_docs", None, True) == FORCE
        assert backfill_config("team_docs", None, False) == {"ops": {NODE: {"config": {"force": False}}}}
        with pytest.raises(ConfigError, match="team_docs is a user folder: it has no upstream version to pin"):
            backfill_config("team_docs", "v1", False)
        with pytest.raises(ConfigError, match="unknown source or folder 'nope'"):
            backfill_config("nope", None, False)
        job = h.defs.resolve_job_def("refresh_team_docs")
        for name in FILES:
            (root / name).unlink()
        refused = job.execute_in_process(
            instance=h.instance, run_config=backfill_config("team_docs", None, False), raise_on_error=False
        )
        assert not refused.success and len(_documents(h)) == len(FILES)
        forced = job.execute_in_process(instance=h.instance, run_config=backfill_config("team_docs", None, True))
        assert forced.success and _documents(h) == []
        assert {m.asset_key for m in forced.get_asset_materialization_events() if m.asset_key} >= {
            dg.AssetKey(["folders", "team_docs"]),
            dg.AssetKey(["embeddings", "team_docs"]),
        }
    finally:
        get_settings.cache_clear()
